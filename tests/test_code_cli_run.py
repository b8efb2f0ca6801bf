"""executeCode in ``nyla run`` (issue 35): a scripted model behind plugin discovery runs a
program in the sandbox that writes a CSV into out/; the run's JSON events show the call
succeed and the CSV is the run user's file."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.models.ai import ChatResponse, Role, ToolCall
from nyla.plugins import PluginHost
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

pytestmark = [
    pytest.mark.db,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

CODE = """
import csv
squares = [(n, n * n) for n in range(1, 6)]
with open("out/squares.csv", "w", newline="") as f:
    csv.writer(f).writerows([("n", "square"), *squares])
print(sum(s for _, s in squares))
"""


def script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        return ChatResponse(
            tool_calls=[ToolCall(id="x", name="executeCode", arguments=json.dumps({"code": CODE}))]
        )
    said = results[-1].text
    saved = [line for line in said.splitlines() if line.startswith("Created")]
    return "sum: " + said.split("stdout:\n")[1].split("\n")[0] + " | " + " ".join(saved)


def test_nyla_run_executes_code_and_keeps_its_csv(monkeypatch, tmp_path, cli_database):
    import nyla_toolbox_code

    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    from nyla import config

    config.reload()
    plugins = [nyla_toolbox_code, ScriptedPlugin(ScriptedProvider(script))]
    monkeypatch.setattr(
        PluginHost,
        "discover",
        classmethod(
            lambda cls, **kw: cls.from_plugins(plugins, builtins=True, names=["code", "scripted"])
        ),
    )
    done = CliRunner().invoke(
        cli,
        ["run", "Square 1..5", "--json", "--model", "scripted:model", "--toolbox", "code"],
    )
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
    results = [e["data"] for e in events if e["type"] == "TOOL_RESULT"]
    assert [(r["toolName"], r["success"]) for r in results] == [("executeCode", True)]
    final = next(e for e in events if e["type"] == "FINAL")["text"]
    assert final == "sum: 55 | Created 'squares.csv' (37 bytes)", final
