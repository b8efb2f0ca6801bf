"""The ``style`` object of ``renderDocument`` (documented in ``docs/tools.md``): fonts,
colours, page size and margins for the whole document, a default table style and table
styles per table."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

#: a colour, ``#RRGGBB``
HEX = r"^#[0-9a-fA-F]{6}$"

#: page sizes in millimetres (portrait)
PAGE_SIZES_MM: dict[str, tuple[float, float]] = {
    "A3": (297, 420),
    "A4": (210, 297),
    "A5": (148, 210),
    "Letter": (215.9, 279.4),
    "Legal": (215.9, 355.6),
}


class _Style(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class TableStyle(_Style):
    """How a table looks: header row colours, borders, zebra stripes, font size."""

    header_background: str = Field(default="#1F4E79", pattern=HEX)
    header_color: str = Field(default="#FFFFFF", pattern=HEX)
    border_color: str = Field(default="#A6A6A6", pattern=HEX)
    stripe_background: str | None = Field(default="#F2F2F2", pattern=HEX)
    font_size: float | None = Field(default=None, ge=5, le=36)


class Style(_Style):
    """The whole document's look. Unknown keys are refused, so a typo is an error."""

    font_family: str = "Helvetica"
    heading_font_family: str | None = None
    font_size: float = Field(default=11, ge=5, le=36)
    text_color: str = Field(default="#222222", pattern=HEX)
    heading_color: str = Field(default="#1F4E79", pattern=HEX)
    page_size: Literal["A3", "A4", "A5", "Letter", "Legal"] = "A4"
    orientation: Literal["portrait", "landscape"] = "portrait"
    margin_mm: float = Field(default=20, ge=0, le=60)
    table: TableStyle = Field(default_factory=TableStyle)
    tables: dict[str, TableStyle] = Field(
        default_factory=dict,
        description="Per table: by number ('2': the second table) or by the name a UDM "
        "table block gives in its style.",
    )

    def table_style(self, number: int, name: str | None) -> TableStyle:
        """The style of the ``number``-th table (1-based) whose block names ``name``."""
        if name and name in self.tables:
            return self.tables[name]
        return self.tables.get(str(number), self.table)

    def page_mm(self) -> tuple[float, float]:
        """Page width and height in millimetres, orientation applied."""
        width, height = PAGE_SIZES_MM[self.page_size]
        return (height, width) if self.orientation == "landscape" else (width, height)

    @property
    def headings_font(self) -> str:
        """The font of headings (the body font unless set)."""
        return self.heading_font_family or self.font_family


def rgb(value: str) -> tuple[int, int, int]:
    """``#RRGGBB`` as three integers."""
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)
