"""Markdown (markdown-it-py, CommonMark with tables) and HTML (lxml) to the UDM."""

from __future__ import annotations

from typing import Any

from nyla.sdk.documents import (
    CodeBlock,
    HeadingBlock,
    ImageBlock,
    ListBlock,
    TableBlock,
    TextBlock,
    UdmDocument,
)
from nyla_toolbox_documents.extract import Extracted, decode

# -- markdown --------------------------------------------------------------------------------


def parse_markdown(text: str) -> UdmDocument:
    """The UDM of Markdown ``text`` (headings, paragraphs, lists, code, pipe tables,
    ``![alt](src)`` images)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    md.validateLink = _allowed_link  # type: ignore[method-assign]
    tokens = md.parse(text)
    doc = UdmDocument(kind="markdown")
    i = 0
    while i < len(tokens):
        i = _md_block(tokens, i, doc)
    return doc


def _allowed_link(url: str) -> bool:
    """markdown-it refuses ``file:`` links, which is how a document names a stored image;
    script schemes stay refused."""
    return not url.strip().lower().startswith(("javascript:", "vbscript:", "data:"))


def markdown(content: bytes) -> Extracted:
    """Extractor of ``.md`` files."""
    return Extracted(parse_markdown(decode(content)))


def _md_block(tokens: list[Any], i: int, doc: UdmDocument) -> int:
    """Adds the block starting at ``tokens[i]``; the index after it."""
    tok = tokens[i]
    if tok.type == "heading_open":
        doc.children.append(HeadingBlock(level=int(tok.tag[1]), text=_inline(tokens[i + 1])))
        return i + 3
    if tok.type == "paragraph_open":
        _md_paragraph(tokens[i + 1], doc)
        return i + 3
    if tok.type in ("bullet_list_open", "ordered_list_open"):
        end = _closing(tokens, i)
        items = [_inline(t) for t in tokens[i:end] if t.type == "inline"]
        doc.children.append(ListBlock(ordered=tok.type == "ordered_list_open", items=items))
        return end + 1
    if tok.type in ("fence", "code_block"):
        text = tok.content[:-1] if tok.content.endswith("\n") else tok.content
        doc.children.append(CodeBlock(language=tok.info.strip(), text=text))
        return i + 1
    if tok.type == "table_open":
        end = _closing(tokens, i)
        doc.children.append(_md_table(tokens[i:end]))
        return end + 1
    return i + 1


def _closing(tokens: list[Any], i: int) -> int:
    """Index of the token closing ``tokens[i]``."""
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _md_table(tokens: list[Any]) -> TableBlock:
    rows: list[list[str]] = []
    header: list[str] = []
    in_head = False
    for t in tokens:
        if t.type == "thead_open":
            in_head = True
        elif t.type == "thead_close":
            in_head = False
        elif t.type == "tr_open":
            rows.append([])
        elif t.type == "inline" and rows:
            rows[-1].append(_inline(t))
        if t.type == "tr_close" and in_head:
            header = rows.pop()
    return TableBlock(header=header, rows=rows)


def _md_paragraph(inline: Any, doc: UdmDocument) -> None:
    images = [c for c in inline.children or [] if c.type == "image"]
    text = _inline(inline)
    if text.strip() and text.strip() != " ".join(_alt(c) for c in images).strip():
        doc.children.append(TextBlock(text=text))
    for image in images:
        doc.children.append(ImageBlock(alt=_alt(image), src=str(image.attrs.get("src", ""))))


def _alt(image: Any) -> str:
    return "".join(c.content for c in image.children or []) or image.content


def _inline(tok: Any) -> str:
    """Plain text of an inline token (emphasis marks dropped, breaks kept)."""
    parts: list[str] = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "image":
            parts.append(_alt(child))
    return "".join(parts).strip()


# -- html ------------------------------------------------------------------------------------

_SKIP = {"script", "style", "noscript", "template", "head", "iframe", "object", "svg"}
_CONTAINERS = {
    "body", "div", "section", "article", "main", "header", "footer", "aside", "nav",
    "blockquote", "figure", "form", "dl", "center", "html",
}  # fmt: skip


def html(content: bytes) -> Extracted:
    """Extractor of HTML pages: headings, paragraphs, lists, preformatted text, tables and
    images (``src`` kept as the page had it); scripts and styles dropped."""
    import lxml.html

    root = lxml.html.document_fromstring(decode(content) or "<html></html>")
    doc = UdmDocument(kind="html", title=" ".join((root.findtext(".//title") or "").split()))
    body = root.find("body")
    _html_children(body if body is not None else root, doc)
    return Extracted(doc)


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _html_children(element: Any, doc: UdmDocument) -> None:
    loose: list[str] = [element.text or ""]
    for child in element:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag in _SKIP or not tag:
            loose.append(child.tail or "")
            continue
        if (
            tag in _CONTAINERS
            or tag in {"h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol"}
            or (tag in {"pre", "table", "img"})
        ):
            _flush_loose(loose, doc)
            _html_block(child, tag, doc)
            loose.append(child.tail or "")
        else:
            loose.append(child.text_content() + (child.tail or ""))
    _flush_loose(loose, doc)


def _flush_loose(loose: list[str], doc: UdmDocument) -> None:
    text = _squeeze("".join(loose))
    if text:
        doc.children.append(TextBlock(text=text))
    loose.clear()


def _html_block(el: Any, tag: str, doc: UdmDocument) -> None:
    if tag in _CONTAINERS:
        _html_children(el, doc)
    elif tag[0] == "h" and len(tag) == 2:
        doc.children.append(HeadingBlock(level=int(tag[1]), text=_squeeze(el.text_content())))
    elif tag == "p":
        text = _squeeze(el.text_content())
        if text:
            doc.children.append(TextBlock(text=text))
        for img in el.iter("img"):
            doc.children.append(_image(img))
    elif tag in ("ul", "ol"):
        items = [_squeeze(li.text_content()) for li in el.iter("li")]
        doc.children.append(ListBlock(ordered=tag == "ol", items=[i for i in items if i]))
    elif tag == "pre":
        doc.children.append(CodeBlock(text=el.text_content().strip("\n")))
    elif tag == "table":
        doc.children.append(_html_table(el))
    elif tag == "img":
        doc.children.append(_image(el))


def _image(img: Any) -> ImageBlock:
    src = str(img.get("src") or "")
    return ImageBlock(alt=str(img.get("alt") or ""), src="" if src.startswith("data:") else src)


def _html_table(table: Any) -> TableBlock:
    rows: list[list[str]] = []
    header: list[str] = []
    for tr in table.iter("tr"):
        cells = [c for c in tr if isinstance(c.tag, str) and c.tag in ("td", "th")]
        values = [_squeeze(c.text_content()) for c in cells]
        if not header and not rows and cells and all(c.tag == "th" for c in cells):
            header = values
        elif any(values):
            rows.append(values)
    caption = table.find("caption")
    return TableBlock(
        caption=_squeeze(caption.text_content()) if caption is not None else "",
        header=header,
        rows=rows,
    )
