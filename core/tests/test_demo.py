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
    assert "2026-05-offsite.txt" in text and "nothing re-embedded" in text
    assert "search check: 4 of 4 queries put the expected file first" in text
    assert "knowledge search 'where is the team offsite' → 2026-05-offsite.txt" in text
    assert "Search first" in text
    assert len(list((tmp_path / "reports").glob("*.md"))) == 1


async def test_the_demo_keeps_to_its_own_schema(embedded_pg, monkeypatch, capsys):
    """`make demo` indexes docs/ in the schema ``nyla_demo``, never in the user's own store."""
    import sqlalchemy as sa

    from nyla import demo

    monkeypatch.setenv("NYLA_DATABASE_URL", embedded_pg)
    monkeypatch.delenv("NYLA_DATABASE_SCHEMA", raising=False)
    monkeypatch.setattr(demo, "DEMO_STEPS", demo.DEMO_STEPS[:1])  # the knowledge step
    engine = sa.create_engine(embedded_pg)
    try:
        await demo.main()
        assert "demo's own schema 'nyla_demo'" in capsys.readouterr().out
        with engine.begin() as conn:
            tables = {
                (schema, name)
                for schema, name in conn.execute(
                    sa.text(
                        "SELECT table_schema, table_name FROM information_schema.tables "
                        "WHERE table_name = 'knowledge_file_index'"
                    )
                )
            }
            assert ("nyla_demo", "knowledge_file_index") in tables
            demo_files = conn.execute(
                sa.text("SELECT count(*) FROM nyla_demo.knowledge_file_index")
            ).scalar_one()
            assert demo_files > 0
            if ("public", "knowledge_file_index") in tables:
                public_demo = conn.execute(
                    sa.text(
                        "SELECT count(*) FROM public.knowledge_file_index WHERE user_id = 'demo'"
                    )
                ).scalar_one()
                assert public_demo == 0
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text("DROP SCHEMA IF EXISTS nyla_demo CASCADE"))
        engine.dispose()
