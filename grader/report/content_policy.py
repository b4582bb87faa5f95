"""The Content-Security-Policy of the grader's self-contained pages (the class report, the
picture of failing cases, a student's feedback page): nothing may load or connect, and only
the page's own inline script and style may run or apply, each allowed by its hash. A page
that has them verbatim in one <script> and one <style> element, and no style attribute,
works as it is; anything else a string from a submission could slip in does not run. A
<meta> element sets it, first in the <head> (grader/report/templates/layout.html.j2).
"""

from __future__ import annotations

import base64
import hashlib


def digest(text: str) -> str:
    """A CSP source for an inline element whose text is `text`."""
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def policy(script: str, style: str) -> str:
    """The policy of a page whose only script is `script` and only style `style`."""
    return ("default-src 'none'; base-uri 'none'; form-action 'none'; "
            f"script-src '{digest(script)}'; style-src '{digest(style)}'")

