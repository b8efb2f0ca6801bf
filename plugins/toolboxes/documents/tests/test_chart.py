"""createChart: each kind drawn at the requested pixel size, SVG beside PNG, inconsistent
data refused before drawing."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nyla_toolbox_documents.chart import ChartArgs, draw, png_size

BAR = {
    "kind": "bar",
    "labels": ["Q1", "Q2", "Q3"],
    "series": [{"name": "2025", "values": [1, 2, 3]}, {"name": "2026", "values": [2, 3, 1]}],
    "title": "Sales",
}


@pytest.mark.parametrize(
    ("chart", "size"),
    [
        (BAR, (800, 500)),
        ({**BAR, "kind": "line", "width": 640, "height": 333}, (640, 333)),
        ({"kind": "pie", "labels": ["a", "b"], "series": [{"values": [3, 1]}]}, (800, 500)),
        ({"kind": "scatter", "series": [{"values": [1, 4], "x": [0.5, 2]}], "width": 1201,
          "height": 299}, (1201, 299)),
    ],
)  # fmt: skip
def test_png_has_the_requested_size(chart, size):
    args = ChartArgs.model_validate({**chart, **dict(zip(("width", "height"), size, strict=True))})
    assert png_size(draw(args, "png")) == size


def test_svg_is_an_svg_with_the_title():
    svg = draw(ChartArgs.model_validate(BAR), "svg").decode()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    # 800 x 500 pixels at 100 per inch are 576 x 360 points
    assert 'width="576pt" height="360pt"' in svg and "Sales" in svg


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"labels": ["Q1"]}, "one value per label"),
        ({"kind": "pie"}, "pie: one series"),
        ({"kind": "scatter"}, "scatter: every series needs x"),
        ({"width": 50}, "greater than or equal to 100"),
        ({"series": [{"values": [1, float("nan"), 3]}]}, "finite"),
    ],
)
def test_inconsistent_charts_are_refused(change, reason):
    with pytest.raises(ValidationError, match=reason):
        ChartArgs.model_validate({**BAR, **change})
