"""`make demo`'s steps run end to end on the test database (offline)."""

from __future__ import annotations

import io

from rich.console import Console

from nyla.demo import DEMO_STEPS, _load_step
from nyla.kernel import Kernel


async def test_every_demo_step_runs(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the eval step writes its report under ./reports
    kernel = Kernel(db=db)
    out = io.StringIO()
    console = Console(file=out, width=160)
    for _title, target in DEMO_STEPS:
        step = _load_step(target)
        assert step is not None, target
        await step(kernel, console)
    text = out.getvalue()
    assert "the model saw the e-mail address: False (placeholders instead: True)" in text
    assert "completed" in text
    assert "phase2" in text and "100.0 %" in text
    assert "0 of the demo user's personal chunks" in text
    assert len(list((tmp_path / "reports").glob("*.md"))) == 1
