"""Extraction: file bytes -> content objects and a structure index, without any model call.

Plain text, Markdown, HTML, PDF (pypdf), DOCX (python-docx), CSV and JSON. A file that cannot
be read raises :class:`ExtractionError` with a reason a user understands (encrypted PDF,
corrupt archive, unsupported type); callers mark that file failed and go on with the rest.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import PurePath
from typing import Any

from nyla.errors import ExtractionError
from nyla.knowledge.html_guard import tame_html
from nyla.knowledge.sections import SectionWriter
from nyla.models.knowledge import ContentObject, ExtractedDocument

#: rows of a CSV file that go into one table content object
CSV_ROWS_PER_OBJECT = 40
# each match consumes its run: linear
_SPACES = re.compile(r"[ \t]+")

_EXTENSIONS: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".rst": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".csv": "csv",
    ".json": "json",
}

_MIME: dict[str, str] = {
    "text/plain": "text",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "text/csv": "csv",
    "application/json": "json",
}

MIME_BY_KIND: dict[str, str] = {v: k for k, v in reversed(list(_MIME.items()))}


def detect_kind(name: str, mime_type: str | None = None) -> str | None:
    """The extractor kind for a file name / mime type, or ``None`` when unsupported."""
    if mime_type:
        kind = _MIME.get(mime_type.split(";")[0].strip().lower())
        if kind:
            return kind
    return _EXTENSIONS.get(PurePath(name).suffix.lower())


def extract(name: str, content: bytes, mime_type: str | None = None) -> ExtractedDocument:
    """Extract ``content`` of file ``name``; raises :class:`ExtractionError` when unreadable."""
    kind = detect_kind(name, mime_type)
    if kind is None:
        if mime_type and mime_type.startswith("text/"):
            kind = "text"
        else:
            raise ExtractionError(f"unsupported file type: {name} ({mime_type or 'unknown'})")
    try:
        document = _EXTRACTORS[kind](content)
    except ExtractionError:
        raise
    except Exception as exc:
        raise ExtractionError(f"cannot read {kind} file {name}: {exc}") from exc
    for obj in document.objects:
        if "\x00" in obj.text:  # PostgreSQL text cannot hold NUL
            obj.text = obj.text.replace("\x00", "")
    document.objects = [o for o in document.objects if o.text.strip()]
    if not document.summary:
        document.summary = _summary(document)
    return document


def _decode(content: bytes) -> str:
    if content.startswith(b"\xef\xbb\xbf"):
        content = content[3:]
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return content.decode("latin-1")


def _summary(document: ExtractedDocument) -> str:
    parts = [document.kind]
    s = document.structure
    for key in ("pages", "sections", "tables", "rows", "paragraphs"):
        value = s.get(key)
        count = len(value) if isinstance(value, list) else value
        if count:
            parts.append(f"{count} {key}")
    title = s.get("title") or next(
        (h.get("title") for h in s.get("sections", []) if h.get("title")), None
    )
    head = ", ".join(parts)
    return f"{head}: {title}" if title else head


# -- plain text ------------------------------------------------------------------------------


def _text(content: bytes) -> ExtractedDocument:
    text = _decode(content)
    return ExtractedDocument(
        kind="text",
        objects=[ContentObject(text=text.strip(), context_ref="text")],
        structure={"paragraphs": _paragraphs(text), "chars": len(text)},
    )


# Text from a file is untrusted: the helpers below read it with string methods in one pass
# where a regular expression would backtrack (issue 27: the heading pattern took cubic time
# on a heading line with a long run of spaces).


def _paragraphs(text: str) -> int:
    """Runs of non-blank lines separated by blank ones."""
    count, blank = 0, True
    for line in text.split("\n"):
        if line.strip():
            count += blank
            blank = False
        else:
            blank = True
    return count


def _md_heading(line: str) -> tuple[int, str] | None:
    """``(level, title)`` of an ATX heading line (``## Title ##``), else ``None``."""
    level = len(line) - len(line.lstrip("#"))
    rest = line[level:]
    if not 1 <= level <= 6 or not rest[:1].isspace():
        return None
    body = rest.strip()
    title = body.rstrip("#").rstrip() or body[:1]  # closing hashes are not the title
    return (level, title) if title else None


def _md_table_line(line: str) -> bool:
    """Whether ``line`` is a row of a pipe table (``| a | b |``)."""
    stripped = line.strip()
    return len(stripped) >= 2 and stripped[0] == "|" and stripped[-1] == "|"


def _md_rule_row(row: str) -> bool:
    """Whether a table row is the ``|---|:--|`` line under the header."""
    return bool(row) and all(ch.isspace() or ch in "|:-" for ch in row)


def _squeeze_lines(text: str) -> str:
    """``text`` with the whitespace around each line break and blank lines removed."""
    return "\n".join(s for s in (line.strip() for line in text.split("\n")) if s)


# -- markdown --------------------------------------------------------------------------------


def _markdown(content: bytes) -> ExtractedDocument:
    text = _decode(content)
    doc = SectionWriter("preamble")
    tables: list[dict[str, Any]] = []
    table: list[str] = []
    in_fence = False

    def flush_table() -> None:
        if table:
            rows = [r for r in table if not _md_rule_row(r)]
            n = len(tables) + 1
            ref = doc.ref()
            tables.append({"ref": f"table {n}", "rows": max(0, len(rows) - 1), "section": ref})
            doc.objects.append(
                ContentObject(
                    text="\n".join(rows), context_ref=f"{ref} / table {n}", content_type="table"
                )
            )
            table.clear()

    for line in text.splitlines():
        if line.strip().startswith(("```", "~~~")):
            in_fence = not in_fence
        heading = None if in_fence else _md_heading(line)
        if heading:
            flush_table()
            doc.heading(*heading)
            continue
        if not in_fence and _md_table_line(line):
            doc.flush()
            table.append(line.strip())
            continue
        flush_table()
        doc.body.append(line)
    flush_table()
    doc.flush()
    title = next((s["title"] for s in doc.sections if s["level"] == 1), None)
    return ExtractedDocument(
        kind="markdown",
        objects=doc.objects,
        structure={"title": title, "sections": doc.sections, "tables": tables},
    )


# -- html ------------------------------------------------------------------------------------


class _HtmlCollector(HTMLParser):
    """Collects headings, paragraphs and tables of an HTML page (scripts and styles dropped)."""

    _SKIP = {"script", "style", "noscript", "template", "head"}
    _BLOCK = {"p", "div", "li", "br", "section", "article", "blockquote", "pre", "tr", "dd", "dt"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.sections: list[dict[str, Any]] = []
        self.tables: list[dict[str, Any]] = []
        self.objects: list[ContentObject] = []
        self._skip = 0
        self._in_title = False
        self._heading: int | None = None
        self._heading_text: list[str] = []
        self._path: list[tuple[int, str]] = []
        self._body: list[str] = []
        self._table_depth = 0
        self._rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def _ref(self) -> str:
        return "section " + " > ".join(t for _, t in self._path) if self._path else "page"

    def _flush(self) -> None:
        text = _squeeze_lines(_SPACES.sub(" ", "".join(self._body)))
        if text:
            heading = self._path[-1][1] if self._path else ""
            prefix = f"{heading}\n\n" if heading else ""
            self.objects.append(ContentObject(text=prefix + text, context_ref=self._ref()))
        self._body = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self._SKIP:
            self._skip += 1
            return
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._flush()
            self._heading = int(tag[1])
            self._heading_text = []
        elif tag == "table":
            if self._table_depth == 0:
                self._flush()
                self._rows = []
            self._table_depth += 1
        elif tag == "tr" and self._table_depth:
            self._rows.append([])
        elif tag in ("td", "th") and self._table_depth:
            self._cell = []
        elif tag in self._BLOCK:
            self._body.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if self._heading is not None and tag == f"h{self._heading}":
            title = " ".join("".join(self._heading_text).split())
            while self._path and self._path[-1][0] >= self._heading:
                self._path.pop()
            self._path.append((self._heading, title))
            self.sections.append({"title": title, "level": self._heading, "ref": self._ref()})
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None:
            if self._rows:
                self._rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table" and self._table_depth:
            self._table_depth -= 1
            if self._table_depth == 0:
                rows = [r for r in self._rows if any(r)]
                if rows:
                    n = len(self.tables) + 1
                    self.tables.append(
                        {"ref": f"table {n}", "rows": len(rows) - 1, "section": self._ref()}
                    )
                    self.objects.append(
                        ContentObject(
                            text="\n".join(" | ".join(r) for r in rows),
                            context_ref=f"{self._ref()} / table {n}",
                            content_type="table",
                        )
                    )
        elif tag in self._BLOCK:
            self._body.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._skip:
            return
        if self._heading is not None:
            self._heading_text.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif not self._table_depth:
            self._body.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _html(content: bytes) -> ExtractedDocument:
    parser = _HtmlCollector()
    parser.feed(tame_html(_decode(content)))
    parser.close()
    return ExtractedDocument(
        kind="html",
        objects=parser.objects,
        structure={
            "title": parser.title.strip() or None,
            "sections": parser.sections,
            "tables": parser.tables,
        },
    )


# -- pdf, docx (nyla.knowledge.extract_office; their libraries load on first use) ------------


def _pdf(content: bytes) -> ExtractedDocument:
    from nyla.knowledge.extract_office import extract_pdf

    return extract_pdf(content)


def _docx(content: bytes) -> ExtractedDocument:
    from nyla.knowledge.extract_office import extract_docx

    return extract_docx(content)


# -- csv / json ------------------------------------------------------------------------------


def _csv(content: bytes) -> ExtractedDocument:
    text = _decode(content)
    try:
        dialect: Any = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = [r for r in csv.reader(io.StringIO(text), dialect) if any(c.strip() for c in r)]
    if not rows:
        return ExtractedDocument(kind="csv", structure={"rows": 0, "columns": []})
    header, data = rows[0], rows[1:]
    objects = []
    for start in range(0, len(data), CSV_ROWS_PER_OBJECT):
        block = data[start : start + CSV_ROWS_PER_OBJECT]
        lines = [" | ".join(header)] + [" | ".join(r) for r in block]
        objects.append(
            ContentObject(
                text="\n".join(lines),
                context_ref=f"rows {start + 1}-{start + len(block)}",
                content_type="table",
            )
        )
    return ExtractedDocument(
        kind="csv",
        objects=objects,
        structure={
            "rows": len(data),
            "columns": header,
            "tables": [{"ref": "table 1", "rows": len(data)}],
        },
    )


def _json(content: bytes) -> ExtractedDocument:
    try:
        data = json.loads(_decode(content))
    except json.JSONDecodeError as exc:
        raise ExtractionError(f"invalid JSON: {exc}") from exc

    def flatten(value: Any, path: str, out: list[str]) -> list[str]:
        if isinstance(value, dict):
            for key, item in value.items():
                flatten(item, f"{path}.{key}" if path else str(key), out)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                flatten(item, f"{path}[{i}]", out)
        else:
            out.append(f"{path or '$'}: {value}")
        return out

    # top-level entries become their own objects so a chunk keeps its keys together
    if isinstance(data, dict):
        objects = [
            ContentObject(text="\n".join(flatten(v, str(k), [])), context_ref=f"key {k}")
            for k, v in data.items()
        ]
        keys = list(data)
    else:
        objects = [ContentObject(text="\n".join(flatten(data, "", [])), context_ref="document")]
        keys = []
    values = sum(o.text.count("\n") + 1 for o in objects if o.text)
    return ExtractedDocument(
        kind="json",
        objects=objects,
        structure={"keys": keys, "values": values, "type": type(data).__name__},
    )


_EXTRACTORS: dict[str, Callable[[bytes], ExtractedDocument]] = {
    "text": _text,
    "markdown": _markdown,
    "html": _html,
    "pdf": _pdf,
    "docx": _docx,
    "csv": _csv,
    "json": _json,
}
