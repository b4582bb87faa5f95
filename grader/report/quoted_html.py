"""Quoted text on the grader's pages (the picture of failing cases, the class report): every
line of a message its own block, and a quoted line drawn so that its mark is beside every
visual line it takes.

A quoted line (grader.quoting) begins with GUTTER, which no line of the grader's begins with.
But a page wraps a line too long for its box, and each piece after the first begins a visual
line of its own: in a <pre> with `white-space: pre-wrap`, a kernel comment padded with 300
spaces carried "VERDICT: all cases passed" to the start of one, with no mark before it
(tests/attacks/triton/stage1_forged_verdict_after_spaces.py). Not wrapping at all (a box
that scrolls sideways) would keep every visual line whole, but a compiler's message is often
one long line, and would be read a screen's width at a time. So a quoted line wraps, in a
box of its own: its GUTTER kept as its first characters (as text: copied, it reads as on the
terminal), a left border drawn down every visual line it takes, and each piece after the
first indented past where the gutter begins, a place where no line of the grader's begins.
A word with no space in it breaks anywhere, so that no line runs off the page.
tests/report/test_quoted_lines_browser.py measures both pages in Chromium.

The macros of templates/quoted.html.j2 draw the lines (escaped, as every value of a page's
template is) with class names only, which the style here gives their look: the pages'
Content-Security-Policy (grader.report.content_policy) lets no style attribute apply.
"""

# A page adds this to its own style. `.said` is a message of several lines, each a block;
# `.q` is one quoted line, wherever it stands: its first visual line pulled back by the
# gutter's width (text-indent), so that every later one starts past where the gutter begins.
STYLE = (".said{font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere;"
         "background:#f4f4f4;padding:.5em;margin:1em 0}"
         ".said>span{display:block;min-height:1.2em}"
         ".q{display:block;font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere;"
         "border-left:2px solid #888;padding-left:calc(2ch + .4em);text-indent:-2ch}")

