"""A student's feedback file as a page: OUT/students/NAME.html beside NAME.md.

The class report linked each student's feedback as Markdown, which a browser shows as raw
text. The page is the same Markdown (grader.report.markdown writes it) drawn by markdown-it,
CommonMark with tables, with raw HTML off: whatever a submission's text holds is escaped as
text, never markup. What a submission said stands in fenced blocks, drawn as <pre> that does
not wrap (it scrolls), so no piece of a quoted line can begin a visual line of its own. The
page loads nothing and runs nothing: no script, and its one style allowed by its hash
(grader.report.content_policy). Around markdown-it's HTML, the page is
templates/feedback.html.j2's, which escapes the title as it does every value.
"""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt

from grader.report.pages import page as drawn_page
from grader.results import write_file

STYLE = ("body{font-family:sans-serif;margin:2em;max-width:60em;color:#111}"
         "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.2em .5em}"
         "pre{white-space:pre;overflow-x:auto;background:#f4f4f4;padding:.5em}"
         "code{font-family:monospace}")
# CommonMark with tables; raw HTML in the text is escaped, links only to what a browser
# would not run (markdown-it refuses javascript: and data: by itself).
_RENDERER = MarkdownIt("commonmark", {"html": False}).enable("table")


def page(markdown: str, title: str) -> str:
    """The page of one feedback file's Markdown."""
    from markupsafe import Markup

    # markdown-it escapes the text itself (raw HTML off): its HTML is markup to keep as it is
    return drawn_page("feedback.html.j2", "", STYLE, title=title,
                      drawn=Markup(_RENDERER.render(markdown)))


def write_feedback_page(markdown_file: Path) -> Path:
    """NAME.html beside the feedback file NAME.md; returns its path."""
    path = markdown_file.with_suffix(".html")
    write_file(path, page(markdown_file.read_text(encoding="utf-8"),
                          f"feedback: {markdown_file.stem}"))
    return path
