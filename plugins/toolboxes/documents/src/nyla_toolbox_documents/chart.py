"""``createChart``: bar, line, pie and scatter charts drawn by matplotlib (its Agg and SVG
back ends, no display), saved as PNG and/or SVG of the requested pixel size."""

from __future__ import annotations

import asyncio
import io
import math
import struct
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from nyla.sdk import Tool, ToolContext, ToolResult, download_name
from nyla.sdk.documents import save_tool_file

#: pixels per inch the chart is drawn at (the size asked for is in pixels)
DPI = 100
_MIME = {"png": "image/png", "svg": "image/svg+xml"}


class Series(BaseModel):
    """One data series: its values (and x values for a scatter chart)."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    values: list[float] = Field(min_length=1, max_length=10_000)
    x: list[float] | None = Field(default=None, description="Scatter only: x of each value.")


class ChartArgs(BaseModel):
    """Arguments of ``createChart``."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    kind: Literal["bar", "line", "pie", "scatter"]
    series: list[Series] = Field(min_length=1, max_length=20)
    labels: list[str] = Field(
        default_factory=list, description="Category of each value (bar, line, pie)."
    )
    title: str = ""
    x_label: str = ""
    y_label: str = ""
    width: int = Field(default=800, ge=100, le=4000, description="Pixels.")
    height: int = Field(default=500, ge=100, le=4000, description="Pixels.")
    formats: list[Literal["png", "svg"]] = Field(default=["png", "svg"], min_length=1)
    name: str = Field(default="chart", description="File name without extension.")

    @model_validator(mode="after")
    def _consistent(self) -> ChartArgs:
        for s in self.series:
            if not all(math.isfinite(v) for v in [*s.values, *(s.x or [])]):
                raise ValueError(f"series {s.name!r}: values must be finite numbers")
        if self.kind == "scatter":
            if any(s.x is None or len(s.x) != len(s.values) for s in self.series):
                raise ValueError("scatter: every series needs x with one number per value")
            return self
        if any(len(s.values) != len(self.labels) for s in self.series):
            raise ValueError(f"{self.kind}: every series needs one value per label")
        if self.kind == "pie":
            values = self.series[0].values
            if len(self.series) != 1 or min(values) < 0 or sum(values) <= 0:
                raise ValueError("pie: one series of non-negative values with a positive sum")
        return self


def draw(args: ChartArgs, fmt: str) -> bytes:
    """The chart as ``png`` or ``svg`` bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(args.width / DPI, args.height / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    named = any(s.name for s in args.series)
    if args.kind == "pie":
        axes.pie(args.series[0].values, labels=args.labels, autopct="%1.0f%%")
        axes.axis("equal")
    elif args.kind == "bar":
        count = len(args.series)
        width = 0.8 / count
        for i, s in enumerate(args.series):
            xs = [n + (i - (count - 1) / 2) * width for n in range(len(args.labels))]
            axes.bar(xs, s.values, width=width, label=s.name or None)
        axes.set_xticks(range(len(args.labels)), args.labels)
    elif args.kind == "line":
        for s in args.series:
            axes.plot(args.labels, s.values, marker="o", label=s.name or None)
    else:
        for s in args.series:
            axes.scatter(s.x or [], s.values, label=s.name or None)
    if args.kind != "pie":
        axes.set_xlabel(args.x_label)
        axes.set_ylabel(args.y_label)
        if named:
            axes.legend()
    axes.set_title(args.title)
    figure.tight_layout()
    out = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else None
    figure.savefig(out, format=fmt, dpi=DPI, metadata=metadata)
    return out.getvalue()


def png_size(content: bytes) -> tuple[int, int]:
    """Width and height of a PNG, from its header."""
    if content[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", content[16:24])
    return int(width), int(height)


async def create_chart(args: ChartArgs, ctx: ToolContext) -> ToolResult:
    """Draw and save the chart in each format."""
    base = download_name(args.name, "chart")
    saved = []
    for fmt in dict.fromkeys(args.formats):
        content = await asyncio.to_thread(draw, args, fmt)
        if fmt == "png" and png_size(content) != (args.width, args.height):
            return ToolResult.fail(
                f"the chart came out {png_size(content)}, not {args.width}x{args.height}",
                "RENDER_FAILED",
            )
        saved.append(
            await save_tool_file(
                ctx, f"{base}.{fmt}", content, _MIME[fmt], label=f"createChart:{base}"
            )
        )
    text = "\n".join(s.summary for s in saved)
    return ToolResult.ok(text, data={"files": [s.to_wire() for s in saved]})


def chart_tools() -> list[Tool]:
    """``createChart``."""
    return [
        Tool.from_model(
            "createChart",
            "Draw a bar, line, pie or scatter chart (series, labels, title) as PNG and/or SVG "
            "files; put one in a document with ![alt](file:<fileId>).",
            ChartArgs,
            create_chart,
            timeout_s=60,
        )
    ]
