"""HTML made safe for the standard library's parser before extraction.

``html.parser`` looks for the end of a construct from every place one starts: a comment
without ``-->``, a tag without ``>``, a marked section without ``]]>`` each make it scan to the
end of the document, once per opening, which is quadratic time on a page of unterminated
openings (``<a href='`` or ``<!--`` repeated: 32,000 characters took seconds). Such an opening
is no markup anyway: here it becomes text (``&lt;``) unless its end lies within
:data:`MAX_TAG_CHARS`, which bounds every scan the parser makes. One pass, each end found
by a pointer that only moves forward.
"""

from __future__ import annotations

#: the longest tag or comment the parser is given as markup
MAX_TAG_CHARS = 8_192


class _NextEnd:
    """Where ``marker`` next occurs at or after a position that only grows."""

    def __init__(self, text: str, marker: str) -> None:
        self.text, self.marker, self.at = text, marker, -2

    def after(self, pos: int) -> int:
        """The first occurrence of the marker at or after ``pos`` (-1: none)."""
        if self.at == -1 or (self.at >= pos):
            return self.at
        self.at = self.text.find(self.marker, pos)
        return self.at


def tame_html(html: str) -> str:
    """``html`` with every ``<`` whose construct does not end within :data:`MAX_TAG_CHARS`
    (and every ``<![``, whose end the parser reads with a backtracking pattern) escaped."""
    tag_end, comment_end = _NextEnd(html, ">"), _NextEnd(html, "-->")
    out: list[str] = []
    pos = done = 0
    while (pos := html.find("<", pos)) >= 0:
        comment = html.startswith("<!--", pos)
        end = comment_end.after(pos + 4) if comment else tag_end.after(pos + 1)
        if end < 0 or end - pos > MAX_TAG_CHARS or html.startswith("<![", pos):
            out.append(html[done:pos])
            out.append("&lt;")
            done = pos + 1
            pos += 1
        elif comment:
            pos = end + 3  # what a comment holds is no markup
        else:
            pos += 1
    out.append(html[done:])
    return "".join(out)
