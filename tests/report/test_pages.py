"""The pages drawn from templates (grader.report.pages): every value escaped, in an element's
text and in an attribute's value alike; a value a template is not given is an error; and the
Content-Security-Policy of each page allows the very script and style it holds."""

import re
from html.parser import HTMLParser

import jinja2
import pytest
import torch

from grader.judge.compare import Expected, compare
from grader.course import Tolerance
from grader.report import pages
from grader.report.class_page import page as class_page
from grader.report.class_view import ClassView, StageColumn, Student
from grader.report.content_policy import digest
from grader.report.feedback_page import page as feedback_page
from grader.report.picture_html import page as picture_page
from grader.replay.execute import LaunchRecord
from grader.results import CaseResult, Report, StageResult, Status
from grader.sandbox.outcomes import Outcome
from grader.tracks import TRACKS

HOSTILE = "<script>alert(1)</script>\"'"  # ends both kinds of quoted attribute
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39;"


class Parsed(HTMLParser):
    """What a browser makes of a page: its elements' attributes, its text, its scripts' and
    styles' text."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.attributes: list[tuple[str, str, str]] = []  # (tag, name, value)
        self.text: list[str] = []
        self.inline: dict[str, list[str]] = {"script": [], "style": []}
        self.tags: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]

    def handle_data(self, data):
        if self.tags and self.tags[-1] in self.inline:
            self.inline[self.tags[-1]].append(data)
        else:
            self.text.append(data)

    def handle_endtag(self, tag):
        if self.tags and self.tags[-1] == tag:
            self.tags.pop()


def hostile_picture() -> str:
    """A picture page whose course, case, program name and quoted line are HOSTILE: the name
    is on the grid (text) and in its cell's label (an attribute)."""
    want = torch.zeros(2, 2)
    outcome = Outcome(output=want + 1, launches=[LaunchRecord("k", (1, 1), {"BLOCK_M": 2},
                                                              language="triton")],
                      writers=torch.zeros(2, 2, dtype=torch.int32), writer_launch=0)
    picture = compare(outcome, Expected(want, torch.float32, "cpu", Tolerance(1e-5, 1e-5),
                                        TRACKS["triton"], ["BLOCK_M"])).picture
    picture["names"] = {"0": HOSTILE}
    case = CaseResult(HOSTILE, "float32", {}, 0, False, f"wrong: {HOSTILE}", [f"┆ {HOSTILE}"],
                      picture=picture)
    stage = StageResult(1, "s", HOSTILE, "cpu", "m.py", 10, cases=[case])
    return picture_page(Report(HOSTILE, "exercises", "triton", "", {}, "", stages=[stage]))


def hostile_class() -> str:
    """A class report whose course, student, their people and their error are HOSTILE."""
    stage = StageResult(1, "vector_add", "Vector add", "triton", "m.py", 10, Status.ERROR,
                        message=f"raised:\n┆ {HOSTILE}")
    students = [Student(HOSTILE, Report("c", "exercises", "triton", "", {}, "", stages=[stage]),
                        "triton", people=HOSTILE, feedback=f"students/{HOSTILE}.html"),
                Student("cy", None, "triton", f"no result: {HOSTILE}")]
    return class_page(ClassView(HOSTILE, [StageColumn(1, "vector_add", "Vector add", 10)],
                                students))


def test_the_environment_escapes_text_and_attributes():
    drawn = pages.environment().from_string(
        "<p title='{{ s }}' data-x=\"{{ s }}\">{{ s }}</p>").render(s=HOSTILE)
    assert drawn == f"<p title='{ESCAPED}' data-x=\"{ESCAPED}\">{ESCAPED}</p>"


@pytest.mark.parametrize("draw", [hostile_picture, hostile_class])
def test_a_submission_s_string_is_text_never_markup(draw):
    html = draw()
    parsed = Parsed(html)
    assert "<script>alert" not in html and ESCAPED in html
    assert len(parsed.inline["script"]) == 1  # the page's own
    assert HOSTILE in "".join(parsed.text)
    assert not [name for _, name, _ in parsed.attributes if name.startswith("on")]


def test_a_submission_s_string_in_an_attribute_is_its_whole_value():
    """A program's name from the submission is its cell's label: it ends no attribute and
    makes none, and the label reads as the name."""
    parsed = Parsed(hostile_picture())
    labels = [value for tag, name, value in parsed.attributes
              if tag == "td" and name == "aria-label"]
    assert labels and all(label.endswith(f"stored by program {HOSTILE}") for label in labels)
    assert {name for tag, name, _ in parsed.attributes if tag == "td"} == \
        {"class", "tabindex", "aria-label"}


def test_a_students_feedback_link_is_their_file_quoted():
    href = next(value for tag, name, value in Parsed(hostile_class()).attributes
                if tag == "a" and name == "href")
    assert href == "students/%3Cscript%3Ealert%281%29%3C/script%3E%22%27.html"


def test_a_value_a_template_is_not_given_is_an_error():
    with pytest.raises(jinja2.UndefinedError, match="title"):
        pages.page("feedback.html.j2", "", "", drawn="")


@pytest.mark.parametrize("draw", [hostile_picture, hostile_class,
                                  lambda: feedback_page(f"# {HOSTILE}\n", HOSTILE)],
                         ids=["picture", "class", "feedback"])
def test_each_page_s_policy_allows_the_script_and_style_it_holds(draw):
    html = draw()
    parsed = Parsed(html)
    policy = next(value for tag, name, value in parsed.attributes
                  if tag == "meta" and name == "content" and "default-src" in value)
    scripts, styles = parsed.inline["script"], parsed.inline["style"]
    assert len(styles) == 1 and len(scripts) <= 1
    assert f"style-src '{digest(styles[0])}'" in policy
    assert f"script-src '{digest(scripts[0] if scripts else '')}'" in policy
    assert re.search(r" style=", html) is None


def test_every_template_compiles():
    environment = pages.environment()
    names = environment.list_templates()
    assert {"layout.html.j2", "picture.html.j2", "class.html.j2", "feedback.html.j2"} <= set(names)
    for name in names:
        environment.get_template(name)
