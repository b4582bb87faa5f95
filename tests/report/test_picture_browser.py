"""The page of `grade --picture` in a real browser (tests/headless.py: Debian's Chromium,
headless, through Playwright), for fault files graded for real on Triton's interpreter: a
vector add whose loads leave the vector (every value right), a fused GELU without its bias
(every element of the 45 x 301 case wrong) and one whose tile column ignores the program id
(programs share tiles, others are never written: the screenshot), and one that stores its
output with x's strides (every element wrong; the relation above the grid, the error's
size as shades, each program's region named on the grid: the second screenshot).

The page loads from the file system with no console error and no request beyond itself,
each output is drawn at its shape, and hovering over a cell (or moving to it with the arrow
keys) tells which program stored it. The screenshot in docs/images/failure-picture.png is
this test's, and so is docs/images/failure-picture-relation.png: TILECOURSE_SCREENSHOTS=docs/images
makes it write them there too.
"""

import os
import shutil
from pathlib import Path

import pytest
from headless import launched, watched

from grader.grading.request import GradingRequest, Limits, Outputs
from grader.grading.stages import grade_stage
from grader.report.picture_html import write_picture
from grader.results import Report

pytestmark = pytest.mark.slow  # grades two files, and needs Debian's chromium package
FAULTS = Path(__file__).resolve().parents[1] / "faults" / "triton"
STRAYS, WRONG, SHARED, MOVED = ("stage1_load_without_mask.py", "stage2_without_bias.py",
                                "stage2_tile_column_from_division.py",
                                "stage2_output_with_x_strides.py")
SCREENSHOT, RELATION_SHOT = "failure-picture.png", "failure-picture-relation.png"
VIEWPORT = {"width": 1280, "height": 1000}
WIDE = "M=45,N=301,layout=transposed,scale=1.0,bias=random-float32"  # every element wrong (WRONG)
VECTOR = "n=1000-float32"  # the last program loads past the vector's end (STRAYS)
LARGE = "M=256,N=1024,layout=contiguous,scale=1.0,bias=random-float32"  # 4 x 16 tiles, drawn by blocks (SHARED)


@pytest.fixture(scope="module")
def pictures(course, tmp_path_factory) -> dict[str, Path]:
    """Each fault file's page, as `grade N --picture DIR --seed 0` writes it: the course's
    own inputs, so that what a cell holds is the same every run (with a fresh seed, an
    element of a wrong cell may land inside the tolerance by chance)."""
    written = {}
    for name in (STRAYS, WRONG, SHARED, MOVED):
        stage = course.select(name[len("stage")])
        request = GradingRequest(course, (stage,), "triton-interpret", module=FAULTS / name,
                                 seed=0, limits=Limits(None, False), outputs=Outputs())
        report = Report(course.title, "exercises", "triton-interpret", "", {}, "",
                        stages=[grade_stage(request.resolve(), stage)])
        written[name] = write_picture(report, tmp_path_factory.mktemp("picture"))
    return written


@pytest.fixture(scope="module")
def browser():
    with launched() as opened:
        yield opened


@pytest.fixture
def opened(browser, pictures):
    """Opens a fault file's page; each page's `problems` is empty at the end of the test."""
    pages = []

    def open_page(name: str):
        pages.append(watched(browser, pictures[name].as_uri(), VIEWPORT))
        return pages[-1]

    yield open_page
    for page in pages:
        assert page.problems == [], page.url
        page.close()


def case(page, case_id: str):
    return page.locator("section", has=page.locator("h3", has_text=case_id)).first


def test_the_pages_load_with_no_console_error(opened):
    for name in (STRAYS, WRONG, SHARED):
        page = opened(name)
        assert page.title() == "failures, drawn"
        assert page.locator("table.pic").count() > 2
        assert "No failing case has a picture" not in page.content()
        assert page.problems == []


def test_a_wide_output_is_drawn_at_its_shape(opened):
    grid = case(opened(WRONG), WIDE).locator("table.pic")
    assert grid.locator("tr").count() == 45
    assert grid.locator("tr").first.locator("td").count() == 76  # cells of 1 x 4 elements
    assert grid.locator("td.bad").count() == 45 * 76
    box = grid.bounding_box()
    rows = grid.locator("tr").nth(10).bounding_box()
    assert box["width"] > 600 and box["height"] > 200  # a grid, not a strip
    assert abs(box["height"] / 45 - rows["height"]) < 2  # 45 rows of the same height
    assert box["width"] / box["height"] > 1.4  # 76 columns across, 45 rows down


def test_loads_past_the_end_are_drawn(opened):
    grid = case(opened(STRAYS), VECTOR).locator("table.pic")
    strays = grid.locator("td.oob")
    assert strays.count() > 0 and grid.locator("td.ok").count() > 0
    box = strays.first.bounding_box()
    assert box and box["width"] > 3 and box["height"] > 3
    colour = strays.first.evaluate("c => getComputedStyle(c).backgroundColor")
    assert colour not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")


def test_hover_and_keyboard_tell_which_program_stored_a_cell(opened):
    page = opened(WRONG)
    section = case(page, WIDE)
    info = section.locator("p.info")
    cells = section.locator("table.pic tr").nth(3).locator("td")
    cells.nth(20).hover()  # columns 80:84, in the second tile
    assert info.text_content() == "out[3, 80:84] (4 elements): 4 wrong; stored by program 1"
    section.locator("table.pic td[tabindex='0']").focus()
    assert info.text_content().startswith("out[0, 0:4] (4 elements): 4 wrong; stored by program 0")
    for _ in range(16):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert info.text_content() == "out[1, 64:68] (4 elements): 4 wrong; stored by program 1"
    focused = page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert focused == info.text_content()
    strays = case(opened(STRAYS), VECTOR)
    strays.locator("td.oob").last.hover()
    said = strays.locator("p.info").text_content()
    assert said.startswith("out[999]: by a program that went out of bounds: got ")
    assert said.endswith("stored by program 3")


def test_a_large_output_is_drawn_by_blocks_with_their_counts(opened):
    section = case(opened(SHARED), LARGE)
    grid = section.locator("table.pic")
    assert grid.locator("tr").count() == 64
    assert grid.locator("tr").first.locator("td").count() == 128
    # the tile column repeats the tile row: the diagonal's 4 tiles are stored by all the programs
    # of their row (16 x 8 cells of 4 x 8 elements a tile), the others by none
    assert grid.locator("td.two").count() == 4 * 16 * 8
    assert grid.locator("td.unw").count() == 60 * 16 * 8
    grid.locator("tr").nth(17).locator("td").nth(9).hover()  # out[68:72, 72:80]: tile (1, 1)
    said = section.locator("p.info").text_content()
    assert said.startswith("out[68:72, 72:80] (32 elements): ")
    # the diagonal tile (1, 1) is stored by the programs of its row: the first named
    assert "32 written more than once" in said and "stored by several programs, among them " in said


def test_a_screenshot_of_the_picture(opened, tmp_path):
    section = case(opened(SHARED), LARGE)
    section.locator("table.pic tr").nth(21).locator("td").nth(12).hover()  # tile (1, 1)
    shot = tmp_path / SCREENSHOT
    section.screenshot(path=str(shot))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    if folder := os.environ.get("TILECOURSE_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / SCREENSHOT)


def test_the_relation_the_error_size_and_the_programs_are_on_the_grid(opened, tmp_path):
    """A wide output stored with x's strides: every cell red, so the picture must show more
    than wrong or right. Above the grid, how the values are wrong; on it, the wrong cells
    shaded by the size of their error (more than one shade here), and each program's
    region named where it begins, parted from the next by a dashed line that crosses the
    tiles' edges (a program that stored across its tile)."""
    section = case(opened(MOVED), WIDE)
    relation = section.locator("p.rel")
    assert relation.is_visible()
    assert "How the values are wrong: it holds the expected elements in column-major order" \
        in relation.text_content()
    grid = section.locator("table.pic")
    shades = {c for c in range(1, 6) if grid.locator(f"td.bad.e{c}").count()}
    assert len(shades) >= 2, shades
    colours = {grid.locator(f"td.bad.e{c}").first.evaluate(
        "c => getComputedStyle(c).backgroundColor") for c in shades}
    assert len(colours) == len(shades)  # each shade drawn in its own colour
    names = grid.locator("span.who")
    assert names.count() >= 5  # programs 0 to 4 of the 45 x 301 case, each named
    assert names.first.is_visible() and names.first.text_content() == "0"
    box = names.first.bounding_box()
    assert box and box["width"] > 4 and box["height"] > 6  # readable on the grid
    assert grid.locator("td.ot").count() > 0  # a dashed line where the program changes
    shot = tmp_path / RELATION_SHOT
    section.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if folder := os.environ.get("TILECOURSE_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / RELATION_SHOT)
