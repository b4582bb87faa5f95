"""Text from a submission, quoted: how the grader shows words it did not write.

Everything a submission's processes send back is data: an exception's text, a compiler's
message (which quotes the student's source lines), what it printed, a type's name, the host
watch's findings, the error of a timed or measured call. None of it may stand in a report as a
line the grader wrote. Two forms, used wherever such text enters a message:

- `quoted` (a block): the grader's own sentence ends in a colon, and the text follows as
  lines that each begin with GUTTER, a mark the grader begins no line of its own with; each
  line escaped, one longer than LINE_CHARS characters going on in the next, at most
  BLOCK_LINES lines, and a line of the grader's own saying how many were left out;
- `inline` and `single_line` (one value inside the grader's sentence: a name, a type's name,
  one finding): newlines and every other control character escaped, cut to a length.

The escapes are those of `visible`, which the terminal applies to whatever else it shows: a
control character is spelled out (ESC as `\\x1b`, a bidi override as `\\u202e`), so the text
can neither move a terminal's cursor nor reorder what it shows. The result is plain text, not
markup: every report still writes it as text (rich Text, XML character data, a fenced
Markdown block).
"""

from __future__ import annotations

import re

GUTTER = "┆ "  # begins each quoted line; no rich box, and no line of the grader's, uses it
BLOCK_LINES = 30  # of a quoted block
LINE_CHARS = 1000  # of each quoted line; a longer one goes on in the next
INLINE_CHARS = 120  # of a value quoted inside a sentence
CUT = "…"

# What can move a terminal's cursor, recolour, erase or reorder what it shows: C0 (ESC, which
# starts every ANSI sequence, and carriage return among them), DEL, C1 (CSI 0x9b starts a
# sequence by itself), the Unicode line separators and the bidirectional overrides that make
# text read in another order than it is stored; and lone surrogates, which no UTF-8 output can
# encode (a `raise RuntimeError("\ud800")` ended the scorecard in a traceback).
_UNSAFE = (r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
           r"\ud800-\udfff")
_UNSAFE_IN_LINES = re.compile(f"[{_UNSAFE}]")
_UNSAFE_IN_LINE = re.compile(rf"[\t\n{_UNSAFE}]")


def visible(text: object, lines: bool = True) -> str:
    """Any string from a submission (an exception's text, a type's name, what it printed),
    safe to show on a terminal: every control character spelled out as its escape (ESC as
    `\\x1b`, a bidi override as `\\u202e`), newlines and tabs kept only with `lines`. The
    result is still not markup: show it as rich Text, or printed with markup off."""
    unsafe = _UNSAFE_IN_LINES if lines else _UNSAFE_IN_LINE
    return unsafe.sub(_spelled_out, str(text))


def _spelled_out(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def single_line(text: object, chars: int = INLINE_CHARS) -> str:
    """`text` as one line: every control character escaped, newlines and tabs too, and cut to
    `chars` characters (the cut marked with an ellipsis)."""
    return _cut(visible(text, lines=False), chars)


def inline(text: object, chars: int = INLINE_CHARS) -> str:
    """A name from a submission (a type's, a device's) inside a sentence of the grader's:
    one line, escaped, cut, between backticks (a backtick in it escaped)."""
    return "`" + single_line(str(text).replace("`", "\\`"), chars) + "`"


def quoted(text: object, lines: int = BLOCK_LINES, chars: int = LINE_CHARS) -> list[str]:
    """`text` as the lines of a quoted block: each escaped and begun with GUTTER, a line
    longer than `chars` characters going on in the next ones (a compiler's message is often
    one long line, its advice at the end); at most `lines` of them, then a line of the
    grader's saying how many were left out."""
    body = [line.rstrip() for line in visible(text).expandtabs(4).split("\n")]
    while body and not body[-1]:
        body.pop()
    while body and not body[0]:
        body.pop(0)
    if not body:
        return [f"{GUTTER}(no text)"]
    folded = [piece for line in body for piece in _folded(line, chars)]
    shown = [GUTTER + piece for piece in folded[:lines]]
    if len(folded) > lines:
        shown.append(f"(the quoted text is cut: {len(folded) - lines} more lines)")
    return shown


def _folded(line: str, chars: int) -> list[str]:
    """`line` in pieces of at most `chars` characters, broken after a space where one falls
    in the last fifth of a piece."""
    pieces = []
    while len(line) > chars:
        at = line.rfind(" ", chars * 4 // 5, chars) + 1 or chars
        pieces.append(line[:at].rstrip())
        line = line[at:]
    return pieces + [line]


def quote(text: object, lines: int = BLOCK_LINES, chars: int = LINE_CHARS) -> str:
    """`quoted`, as one string of lines."""
    return "\n".join(quoted(text, lines, chars))


def said(sentence: str, text: object) -> str:
    """The grader's `sentence` (ending in a colon), then `text` quoted below it."""
    return f"{sentence}\n{quote(text)}"


def is_quoted(line: str) -> bool:
    """Whether a line of a message is a line of quoted text."""
    return line.startswith(GUTTER)


def headline(text: str, chars: int = 300) -> str:
    """The first line of a message, for a one-line place (an annotation, a JUnit message, a
    table cell); when it introduces a quoted block, with the block's first line after it."""
    own, quote = headline_parts(text, chars)
    return f"{own} {quote}" if quote else own


def headline_parts(text: str, chars: int = 300) -> tuple[str, str]:
    """`headline` in its two parts: the grader's line, and the quoted line after it ("" where
    there is none, or the cut leaves none of it), for a page that draws a quoted line apart."""
    lines = [line for line in str(text).splitlines() if line.strip()]
    if not lines:
        return "", ""
    line = lines[0]
    if line.endswith(":") and len(lines) > 1 and is_quoted(lines[1]):
        both = _cut(f"{line} {lines[1]}", chars)
        quote = both[len(line) + 1:]
        return (both[:len(line)], quote) if is_quoted(quote) else (both, "")
    return _cut(line, chars), ""


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:max(chars - len(CUT), 0)] + CUT
