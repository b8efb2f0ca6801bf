"""UDM to one self-contained HTML page (images inlined as data URIs)."""

from __future__ import annotations

import base64
from html import escape
from typing import Any

from nyla.sdk.documents import UdmDocument
from nyla_toolbox_documents.render_images import Images
from nyla_toolbox_documents.style import Style


def render_html(udm: UdmDocument, style: Style, images: Images) -> bytes:
    """The page: the style as CSS, each block as its element."""
    tables = 0
    body: list[str] = []
    for block in udm.blocks():
        if block.type == "table":
            tables += 1
            body.append(_table(block, style, tables))
        else:
            body.append(_block(block, images))
    css = (
        f"body{{font-family:{_font(style.font_family)};font-size:{style.font_size}pt;"
        f"color:{style.text_color};margin:{style.margin_mm}mm;}}"
        f"h1,h2,h3,h4,h5,h6{{font-family:{_font(style.headings_font)};"
        f"color:{style.heading_color};}}"
        "table{border-collapse:collapse;margin:1em 0;}"
        "pre{background:#f6f6f6;padding:.5em;}img{max-width:100%;}"
    )
    page = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(udm.title)}</title><style>{css}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
    return page.encode("utf-8")


def _font(name: str) -> str:
    return '"' + name.replace('"', "").replace("\\", "").replace(";", "") + '", sans-serif'


def _block(block: Any, images: Images) -> str:
    if block.type == "heading":
        return f"<h{block.level}>{escape(block.text)}</h{block.level}>"
    if block.type == "text":
        return f"<p>{escape(block.text)}</p>"
    if block.type == "list":
        tag = "ol" if block.ordered else "ul"
        items = "".join(f"<li>{escape(i)}</li>" for i in block.items)
        return f"<{tag}>{items}</{tag}>"
    if block.type == "code":
        return f"<pre><code>{escape(block.text)}</code></pre>"
    if block.type == "image":
        image = images.get(block.src)
        if image is None:
            return f"<p>[{escape(block.alt or 'image')}]</p>"
        data = base64.b64encode(image.content).decode()
        return f'<img alt="{escape(block.alt)}" src="data:{image.mime_type};base64,{data}">'
    return f"<p>[attachment: {escape(block.name)}]</p>"


def _table(block: Any, style: Style, number: int) -> str:
    ts = style.table_style(number, block.style)
    size = f"font-size:{ts.font_size}pt;" if ts.font_size else ""
    cell = f"border:1px solid {ts.border_color};padding:4px 8px;"
    head = f"background:{ts.header_background};color:{ts.header_color};"
    parts = [f'<table style="{size}">']
    if block.caption:
        parts.append(f"<caption>{escape(block.caption)}</caption>")
    if block.header:
        cells = "".join(f'<th style="{cell}{head}">{escape(c)}</th>' for c in block.header)
        parts.append(f"<thead><tr>{cells}</tr></thead>")
    parts.append("<tbody>")
    for i, row in enumerate(block.rows):
        stripe = f"background:{ts.stripe_background};" if ts.stripe_background and i % 2 else ""
        cells = "".join(f'<td style="{cell}">{escape(c)}</td>' for c in row)
        parts.append(f'<tr style="{stripe}">{cells}</tr>')
    parts.append("</tbody></table>")
    return "".join(parts)
