"""``nyla workflows run|runs|show-run|cancel``: a run with its progress, as JSON, the
user's runs, one run with its events; a failed run exits 1, a workflow that cannot run or
another user's run is a clear error."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from runs_probe import RunsProbe

from nyla.db import Database
from nyla.models.agent import RunContext
from nyla.models.workflows import WorkflowConnection
from nyla.plugins import PluginHost
from nyla.testing import invoke_cli, plugin_kernel

pytestmark = pytest.mark.db

RITA = RunContext(user_id="rita")


@pytest.fixture
async def stored(monkeypatch, tmp_path, cli_database):
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    monkeypatch.setenv("NYLA_JOBS", "inprocess")
    from nyla import config

    config.reload()
    probe = RunsProbe()
    monkeypatch.setattr(
        PluginHost,
        "discover",
        classmethod(lambda cls, **kw: cls.from_plugins([probe], builtins=True, names=["runs"])),
    )
    kernel = plugin_kernel(probe, db=Database(cli_database), builtins=True)
    try:
        good = await kernel.workflows.create("Good", RITA)
        await kernel.workflows.add_node(good.id, "runs", "step", {"label": "a"}, RITA)
        await kernel.workflows.add_node(good.id, "runs", "step", {"label": "b"}, RITA)
        link = WorkflowConnection(from_node="n1", to_node="n2", to_parameter="text")
        await kernel.workflows.connect(good.id, link, RITA)
        bad = await kernel.workflows.create("Flaky", RITA)
        await kernel.workflows.add_node(
            bad.id, "runs", "step", {"label": "x", "failTimes": 9}, RITA
        )
        empty = await kernel.workflows.create("Unfinished", RITA)
        await kernel.workflows.add_node(empty.id, "runs", "step", {}, RITA)
    finally:
        await kernel.aclose()
    return good.id, bad.id, empty.id, probe


def test_run_shows_progress_and_the_nodes(stored):
    good, *_, probe = stored
    done = invoke_cli(["workflows", "run", good])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[0].startswith("run ") and lines[0].endswith(f"of workflow {good} started")
    progress = [line.split("]", 1)[1].split()[:2] for line in lines if line.startswith("[")]
    assert progress == [
        ["RUN_QUEUED", "run"],
        ["RUN_STARTED", "run"],
        ["NODE_STARTED", "n1:"],
        ["NODE_DONE", "n1:"],
        ["NODE_STARTED", "n2:"],
        ["NODE_DONE", "n2:"],
        ["RUN_DONE", "done"],
    ]
    assert "b(a())" in done.output and lines[-1].split()[2] == "done"
    assert probe.calls == ["a", "b"]


def test_run_as_json_then_runs_and_show_run(stored):
    good, *_ = stored
    done = invoke_cli(["workflows", "run", good, "--json", "--max-attempts", "1"])
    assert done.exit_code == 0, done.output
    run = json.loads(done.output)
    assert run["status"] == "done" and run["options"]["maxAttempts"] == 1
    assert [(n["nodeId"], n["status"], n["attempts"]) for n in run["nodes"]] == [
        ("n1", "done", 1),
        ("n2", "done", 1),
    ]
    assert run["nodes"][1]["output"]["text"] == "b(a())"
    assert [e["seq"] for e in run["events"]] == list(range(1, 8))
    listed = invoke_cli(["workflows", "runs", "--json", "--workflow", good])
    assert [r["id"] for r in json.loads(listed.output)["runs"]] == [run["id"]]
    shown = invoke_cli(["workflows", "show-run", run["id"], "--json"])
    assert json.loads(shown.output)["events"] == run["events"]
    text = invoke_cli(["workflows", "show-run", run["id"]])
    assert text.exit_code == 0 and "RUN_DONE" in text.output
    cancel = invoke_cli(["workflows", "cancel", run["id"]])
    assert cancel.output.strip() == f"run {run['id']} had ended"


def test_a_failed_run_exits_1_and_bad_ids_are_clear_errors(stored, monkeypatch):
    _, bad, empty, _ = stored
    failed = invoke_cli(["workflows", "run", bad, "--max-attempts", "2"])
    assert failed.exit_code == 1
    assert "node 'n1' failed" in failed.output
    refused = invoke_cli(["workflows", "run", empty])
    assert refused.exit_code == 1
    assert "cannot run" in refused.output and "'label' is neither set" in refused.output
    missing = invoke_cli(["workflows", "show-run", "nope"])
    assert missing.exit_code == 1 and "workflow run 'nope' not found" in missing.output
    monkeypatch.setenv("NYLA_USER", "otto")
    theirs = invoke_cli(["workflows", "run", bad])
    assert theirs.exit_code == 1 and "not found" in theirs.output


def test_run_binds_its_documents_to_the_named_conversation(stored, cli_database):
    *_, probe = stored

    async def saving() -> str:
        kernel = plugin_kernel(probe, db=Database(cli_database), builtins=True)
        try:
            wf = await kernel.workflows.create("Saving", RITA)
            await kernel.workflows.add_node(
                wf.id, "runs", "step", {"label": "s", "save": True}, RITA
            )
            bob = RunContext(user_id="bob")
            await kernel.files.workflows.create_conversation(bob, "Bob's", workflow_id="bobs-chat")
            return wf.id
        finally:
            await kernel.aclose()

    wf_id = asyncio.run(saving())
    done = invoke_cli(["workflows", "run", wf_id, "--conversation", "ritas-chat", "--json"])
    assert done.exit_code == 0, done.output
    run = json.loads(done.output)
    assert run["conversationId"] == "ritas-chat"
    (listed,) = run["nodes"][0]["output"]["data"]["documents"]
    assert (listed["roundNumber"], listed["taskNumber"], listed["actionNumber"]) == (1, 1, 1)

    async def conversation() -> list:
        kernel = plugin_kernel(probe, db=Database(cli_database), builtins=True)
        try:
            rita = RunContext(user_id="rita", workflow_id="ritas-chat")
            return (await kernel.files.workflows.load("ritas-chat", rita)).documents()
        finally:
            await kernel.aclose()

    (document,) = asyncio.run(conversation())
    assert (document.file_name, listed["documentRef"]) == ("s.txt", f"docItem:{document.id}")
    refused = invoke_cli(["workflows", "run", wf_id, "--conversation", "bobs-chat"])
    assert refused.exit_code == 1 and "may change" in refused.output


def test_a_user_without_the_agent_is_refused_with_exit_code_3(stored):
    good, *_ = stored
    revoked = invoke_cli(["access", "revoke", "agent", "--user", "rita"])
    assert revoked.exit_code == 0, revoked.output
    refused = invoke_cli(["workflows", "run", good])
    assert refused.exit_code == 3, refused.output
    assert "ServiceAccessDenied" in refused.output and "service.agent" in refused.output
    listed = json.loads(invoke_cli(["workflows", "runs", "--json"]).output)
    assert listed == {"runs": []}  # nothing was stored
