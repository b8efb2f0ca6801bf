"""Indexing a folder streams its results: ``keep_results=False`` hands each result to the
progress callback in input order and keeps none, and ``nyla knowledge index --json`` prints
exactly the list it printed when it held them all."""

from __future__ import annotations

import json

from click.testing import CliRunner

from nyla.cli import cli
from nyla.commands.output import json_line
from nyla.knowledge.ingest import Ingestion

from .conftest import ctx, item
from .test_cli import cli_env  # noqa: F401  (fixture)


async def test_results_not_kept_still_reach_progress_in_input_order(kernel):
    contents = [f"Note {i} about the audit in Luzern, week {i}.".encode() for i in range(7)]
    contents[3] = b""  # an empty file: indexed with no chunk, between written ones
    items = [(item(f"f{i}", f"f{i}.txt"), data) for i, data in enumerate(contents)]
    seen: list[tuple[str, int, int]] = []
    returned = await kernel.knowledge.indexing.index_files(
        iter(items),
        context=ctx(),
        total=len(items),
        progress=lambda result, done, total: seen.append((result.name, done, total)),
        keep_results=False,
    )
    assert returned == []
    assert seen == [(f"f{i}.txt", i + 1, 7) for i in range(7)]


def test_index_json_is_the_whole_list_as_before_and_keeps_no_result(
    cli_env,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    returned: list[list] = []
    index_paths = Ingestion.index_paths

    async def spy(self, *args, **kwargs):
        returned.append(await index_paths(self, *args, **kwargs))
        return returned[-1]

    monkeypatch.setattr(Ingestion, "index_paths", spy)
    for i in range(5):
        (tmp_path / f"note-{i}.txt").write_text(f"The heron {i} crossed the mill pond at dawn.")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    args = ["index", str(tmp_path), "--user", f"u-{cli_env}", "--model", "local:hash-384"]
    result = CliRunner().invoke(cli, ["knowledge", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 1  # the broken PDF failed, the rest did not
    rows = json.loads(result.output)
    assert [r["name"] for r in rows] == ["broken.pdf", *(f"note-{i}.txt" for i in range(5))]
    assert [r["status"] for r in rows] == ["failed", *["indexed"] * 5]
    assert result.output == json_line(rows, indent=2) + "\n"
    assert returned == [[]]  # each result went to the output as it came, none was held
