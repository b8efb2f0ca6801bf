"""A fetched page as readable text: HTML without its scripts, styles, navigation, headers,
footers and forms — the ``<main>`` or ``<article>`` when the page marks one — turned into
Markdown-like text by html2text (headings, lists, tables, links kept); other text types
decoded as they are."""

from __future__ import annotations

import contextlib
import json

from nyla_toolbox_web.fetch import Page

#: elements that are never the page's text
_DROPPED = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "form",
    "nav",
    "header",
    "footer",
    "aside",
)


def readable(page: Page) -> tuple[str, str]:
    """The page's title (empty when it has none) and its readable text."""
    if page.content_type in ("text/html", "application/xhtml+xml"):
        return _html(page)
    text = page.body.decode(page.charset or "utf-8", errors="replace")
    if page.content_type == "application/json":
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return "", text.strip()


def _html(page: Page) -> tuple[str, str]:
    import html2text
    import lxml.html
    from lxml import etree

    if page.charset:
        source: str | bytes = page.body.decode(page.charset, errors="replace")
    else:
        source = page.body
    if not source.strip():
        return "", ""
    try:
        root = lxml.html.document_fromstring(source)
    except (etree.ParserError, ValueError):
        return "", ""
    title = " ".join((root.findtext(".//title") or "").split())
    for element in root.xpath("|".join(f"//{tag}" for tag in _DROPPED)):
        element.drop_tree()
    main = root.xpath("//main") or root.xpath("//article") or root.xpath("//body") or [root]
    markup = "".join(lxml.html.tostring(node, encoding="unicode") for node in main)
    converter = html2text.HTML2Text(baseurl=page.final_url, bodywidth=0)
    converter.ignore_images = True
    converter.ignore_emphasis = False
    converter.pad_tables = True
    text = converter.handle(markup)
    lines = [line.rstrip() for line in text.splitlines()]
    collapsed: list[str] = []
    for line in lines:
        if line or (collapsed and collapsed[-1]):
            collapsed.append(line)
    return title, "\n".join(collapsed).strip()
