"""The grader's HTML pages, drawn from the Jinja2 templates in templates/ beside this module:
the picture of failing cases, the class report and a student's feedback page.

Every value a template prints is escaped (autoescape is on for every template), so a string
from a submission cannot become markup however a page is written: escaping by hand was one
forgotten call away from that. A name a template uses that it was not given is an error, not
an empty string (StrictUndefined). The one exception to the escaping is the page's own text:
templates/layout.html.j2 prints the script, the style and the Content-Security-Policy made
of their hashes (grader.report.content_policy) verbatim, from the values `page` gives it, so
the hashes are of the very text the page holds.

Jinja2 is imported when the first page is drawn: `grade --help` and `grade list` do without it.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from grader.quoting import headline_parts, is_quoted, single_line, visible
from grader.report.content_policy import policy

if TYPE_CHECKING:
    import jinja2


def page(template: str, script: str, style: str, **values: Any) -> str:
    """A whole page: `template` extends layout.html.j2, its one script `script` ("" for none)
    and its one style `style`, each allowed by its hash and nothing else."""
    return render(template, script=script, style=style, policy=policy(script, style), **values)


def render(template: str, **values: Any) -> str:
    return environment().get_template(template).render(**values)


@cache
def environment() -> "jinja2.Environment":
    """The one environment of the pages' templates."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("grader.report", "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True)
    # what the templates say of a submission's text: a name on one line with its control
    # characters spelled out, a file's line likewise, a line quoted from it (its mark)
    env.filters.update(single_line=single_line, visible=visible,
                       number="{:g}".format, tenths="{:.1f}".format)
    env.globals.update(is_quoted=is_quoted, headline_parts=headline_parts)
    return env
