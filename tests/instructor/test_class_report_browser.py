"""The class report in a real browser: Debian's Chromium, headless, driven by Playwright
(the `test` extra; it drives the system's Chromium, and downloads no browser of its own).

The page loads from the file system with no console error and no request beyond itself,
its gradebook sorts when a header is pressed (with the mouse or the keyboard), and its
charts are drawn. A machine without Chromium or Playwright fails these tests with the fix:
a check that cannot run is not a pass. The screenshots in docs/images/class-report.png and
similar-submissions.png are this test's: TILECOURSE_SCREENSHOTS=docs/images makes it write
them there too.
"""

import os
import shutil
from pathlib import Path

import pytest
from class_fixture import NO_RESULT, write_class
from headless import launched, watched
from test_similarity import disguised, honest, write_files

from grader.instructor.class_report import write_report

pytestmark = pytest.mark.slow  # needs Debian's chromium package (.ci/run installs it)
SCREENSHOT = "class-report.png"
SIMILAR_SCREENSHOT = "similar-submissions.png"
VIEWPORT = {"width": 1280, "height": 1000}


@pytest.fixture(scope="module")
def browser():
    with launched() as opened:
        yield opened


@pytest.fixture(scope="module")
def report(course, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("class") / "out"
    names = write_class(out, course)
    # Softmax files written apart by four of them, and a fifth's a disguised copy of one:
    # the similar submissions section has a pair to show.
    files = honest()
    files["eve"] = disguised(files["bob"])
    write_files(out, files)
    return write_report(out, course, names)


@pytest.fixture
def page(browser, report):
    """The report open in a fresh page; `page.problems` collects what the browser said was
    wrong (console errors, uncaught exceptions, requests beyond the page's own file)."""
    opened = watched(browser, report.as_uri(), VIEWPORT)
    yield opened
    opened.close()


def _column(page, index: int) -> list[str]:
    return page.eval_on_selector_all(
        "#gradebook-table tbody tr",
        f"rows => rows.map(r => r.cells[{index}].textContent.trim())")


def _header(page, label: str):
    return page.locator("#gradebook-table thead th", has_text=label)


def test_the_page_loads_with_no_console_error(page, report):
    assert page.title().endswith("class report")
    assert page.locator("#gradebook-table tbody tr").count() > 1
    assert page.problems == []


def test_the_gradebook_sorts_by_the_header_pressed(page):
    heads = page.eval_on_selector_all("#gradebook-table thead th",
                                      "hs => hs.map(h => h.textContent.trim())")
    total = heads.index("total")
    _header(page, "total").locator("button").click()
    shown = _column(page, total)
    # Ascending, the student without a result (no total) first.
    values = [float(v) if v else -1.0 for v in shown]
    assert values == sorted(values) and values[0] == -1.0
    assert _header(page, "total").get_attribute("aria-sort") == "ascending"
    _header(page, "total").locator("button").click()
    again = [float(v) if v else -1.0 for v in _column(page, total)]
    assert again == sorted(values, reverse=True)
    assert _header(page, "total").get_attribute("aria-sort") == "descending"
    # The keyboard sorts too: the header's button, focused, pressed with Enter.
    _header(page, "student").locator("button").focus()
    page.keyboard.press("Enter")
    names = _column(page, 0)
    assert names == sorted(names, key=str.lower)
    assert _header(page, "student").get_attribute("aria-sort") == "ascending"
    assert _header(page, "total").get_attribute("aria-sort") is None
    assert NO_RESULT in names and page.problems == []


def test_the_charts_are_drawn(page):
    charts = page.locator("svg.chart")
    assert charts.count() > 5
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 100 and box["height"] > 100, i
        bars = charts.nth(i).locator("rect.bar")
        heights = [bars.nth(j).bounding_box()["height"] for j in range(bars.count())]
        assert max(heights) > 10, i  # the tallest bin stands
    marks = page.locator("svg line.mark")
    assert marks.count() > 0 and marks.first.bounding_box()["height"] > 10


def test_a_screenshot_of_the_similar_submissions(page, tmp_path):
    """The section opened on its top pair, side by side: docs/images/similar-submissions.png."""
    section = page.locator("#similar")
    assert section.count() == 1
    page.locator("details.alike summary").first.click()
    shot = tmp_path / SIMILAR_SCREENSHOT
    page.locator("details.alike").first.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not page.problems
    if folder := os.environ.get("TILECOURSE_SCREENSHOTS"):
        shutil.copy(shot, Path(folder) / SIMILAR_SCREENSHOT)


def test_a_screenshot_of_the_report(page, tmp_path):
    shot = tmp_path / SCREENSHOT
    page.screenshot(path=str(shot), full_page=True,
                    clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": 1400})
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    if folder := os.environ.get("TILECOURSE_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / SCREENSHOT)
