"""The issue's end-to-end case through the CLI: ``nyla run --toolbox workflow`` with a
scripted model builds a three-node workflow, validates and runs it; the run's documents are
in the run's conversation numbered round 3, task 2, actions 1 and 2, and ``nyla workflows
runs`` / ``show-run`` show the run."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from runs_probe import RunsProbe
from test_workflow_run_documents import build_and_run

from nyla.db import Database
from nyla.models.agent import RunContext
from nyla.plugins import PluginHost
from nyla.testing import invoke_cli, plugin_kernel
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

pytestmark = pytest.mark.db

RITA = RunContext(user_id="rita")


def test_nyla_run_builds_runs_and_binds_the_documents(monkeypatch, tmp_path, cli_database):
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    monkeypatch.setenv("NYLA_JOBS", "inprocess")
    from nyla import config

    config.reload()
    ids: list[str] = []
    plugins = [RunsProbe(), ScriptedPlugin(ScriptedProvider(build_and_run(ids)))]
    monkeypatch.setattr(
        PluginHost,
        "discover",
        classmethod(
            lambda cls, **kw: cls.from_plugins(plugins, builtins=True, names=["runs", "scripted"])
        ),
    )

    async def on_kernel(work):
        kernel = plugin_kernel(*plugins, db=Database(cli_database), builtins=True)
        try:
            return await work(kernel)
        finally:
            await kernel.aclose()

    async def create(kernel):
        return (await kernel.workflows.create("Three", RITA)).id

    ids.append(asyncio.run(on_kernel(create)))
    done = invoke_cli(
        ["run", "Build and run it", "--toolbox", "workflow", "--json", "--model", "scripted:model"]
    )
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
    results = [e for e in events if e["type"] == "TOOL_RESULT"]
    assert [r["data"]["success"] for r in results] == [True] * 8
    assert results[-1]["data"]["toolName"] == "runWorkflow"
    run_id = events[0]["data"]["runId"]

    async def conversation(kernel):
        return await kernel.files.workflows.load(f"cli-{run_id}", RITA)

    chat = asyncio.run(on_kernel(conversation))
    documents = [d for m in chat.messages for d in m.documents]
    assert [(d.file_name, d.round_number, d.task_number, d.action_number) for d in documents] == [
        ("a.txt", 3, 2, 1),
        ("b.txt", 3, 2, 2),
    ]
    listed = json.loads(invoke_cli(["workflows", "runs", "--json"]).output)["runs"]
    assert [(r["status"], r["conversationId"], r["roundNumber"]) for r in listed] == [
        ("done", f"cli-{run_id}", 3)
    ]
    shown = json.loads(invoke_cli(["workflows", "show-run", listed[0]["id"], "--json"]).output)
    bound = [
        d["actionNumber"] for n in shown["nodes"] for d in n["output"]["data"].get("documents", [])
    ]
    assert bound == [1, 2]
