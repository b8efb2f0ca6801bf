"""The heading structure of a document read top to bottom (markdown, DOCX): headings open
sections, the body text under a heading becomes one object prefixed with the heading, and every
object and table names the section it sits in."""

from __future__ import annotations

from typing import Any

from nyla.models.knowledge import ContentObject


class SectionWriter:
    """Collects the objects and the section list of one document.

    ``outside`` names text before the first heading (``preamble``, ``body``)."""

    def __init__(self, outside: str) -> None:
        self.outside = outside
        self.path: list[tuple[int, str]] = []
        self.body: list[str] = []
        self.objects: list[ContentObject] = []
        self.sections: list[dict[str, Any]] = []

    def ref(self) -> str:
        """Where the reader is: ``section A > B``, or ``outside`` before any heading."""
        return "section " + " > ".join(t for _, t in self.path) if self.path else self.outside

    def flush(self) -> None:
        """The body text read since the last heading or table as one object."""
        text = "\n".join(self.body).strip()
        if text:
            heading = self.path[-1][1] if self.path else ""
            prefix = f"{heading}\n\n" if heading else ""
            self.objects.append(ContentObject(text=prefix + text, context_ref=self.ref()))
        self.body.clear()

    def heading(self, level: int, title: str) -> None:
        """A heading of ``level``: closes the body before it and opens its section."""
        self.flush()
        while self.path and self.path[-1][0] >= level:
            self.path.pop()
        self.path.append((level, title))
        self.sections.append({"title": title, "level": level, "ref": self.ref()})
