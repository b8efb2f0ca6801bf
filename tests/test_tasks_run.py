"""``nyla run`` end to end over Jira and ClickUp: a scripted model (an OpenAI-compatible
server on localhost behind the private-LLM provider) asks which of the user's open tasks are
due this week; the Jira and ClickUp toolboxes reach a fake Jira Cloud and a fake ClickUp on
localhost (each connection's ``baseUrl``) through their connectors, and the answer cites the
inline task metadata the tools returned. Payloads come from the connectors' documented
samples; due dates are set relative to today so the week is always this week."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from nyla.cli import cli

ROOT = Path(__file__).parent.parent
_spec = importlib.util.spec_from_file_location(
    "fake_jira_for_run", ROOT / "plugins/connectors/jira/tests/fake_jira.py"
)
fake_jira = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_jira)
_spec = importlib.util.spec_from_file_location(
    "fake_clickup_for_run", ROOT / "plugins/connectors/clickup/tests/fake_clickup.py"
)
fake_clickup = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_clickup)
CLICKUP_TOKEN = "pk_183_RUN"

TODAY = date.today()
MONDAY = TODAY - timedelta(days=TODAY.weekday())
SUNDAY = MONDAY + timedelta(days=6)


def _issues() -> list[dict[str, Any]]:
    out = []
    rows = [  # summary, due, done, mine
        ("Fix checkout", SUNDAY, False, True),
        ("Ship release notes", MONDAY, True, True),
        ("Budget review", SUNDAY + timedelta(days=3), False, True),
        ("Update logo", MONDAY, False, False),
    ]
    for i, (summary, due, done, mine) in enumerate(rows, start=1):
        issue = fake_jira.sample("issue")
        issue["id"], issue["key"] = str(10000 + i), f"ED-{i}"
        issue["fields"].update({"summary": summary, "duedate": due.isoformat()})
        if done:
            issue["fields"]["status"] = {"name": "Done", "statusCategory": {"key": "done"}}
        if not mine:
            issue["fields"]["assignee"] = None
        out.append(issue)
    return out


def _clickup() -> Any:
    """Mia's ClickUp: one folderless list with four tasks (due at noon UTC: the same day in
    her Zurich profile time zone)."""
    fake = fake_clickup.FakeClickUp()
    fake.add_space("9001", "790", "Engineering")
    ref = fake.add_list("790", "-", "901", "Inbox")
    leo = fake.teams[0]["members"][1]["user"]
    rows = [  # name, due, closed, mine
        ("Prepare demo", SUNDAY, False, True),
        ("Close sprint", MONDAY, True, True),
        ("Plan offsite", SUNDAY + timedelta(days=3), False, True),
        ("Order swag", MONDAY, False, False),
    ]
    for i, (name, due, closed, mine) in enumerate(rows, start=1):
        noon = datetime.combine(due, datetime.min.time(), tzinfo=UTC) + timedelta(hours=12)
        task = fake_clickup.make_task(
            f"86e{i}", name, ref, due_date=str(int(noon.timestamp() * 1000))
        )
        if closed:
            task["status"] = {
                "status": "complete",
                "color": "#6bc950",
                "orderindex": 2,
                "type": "closed",
            }
        if not mine:
            task["assignees"] = [leo]
        fake.tasks.append(task)
    return fake


class ClickUp(BaseHTTPRequestHandler):
    """ClickUp API v2: the fake account behind a real socket."""

    account = _clickup()
    seen: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        type(self).seen.append(self.path)
        if self.headers.get("Authorization") != CLICKUP_TOKEN:
            reply = fake_clickup.clickup_error("unauthorized", 401)
        else:
            reply = self.account.route(httpx.Request("GET", f"http://clickup{self.path}"))
        self.send_response(reply.status_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply.content)))
        self.end_headers()
        self.wfile.write(reply.content)


class Jira(BaseHTTPRequestHandler):
    """Jira Cloud: the fake site behind a real socket."""

    site = fake_jira.FakeJira(_issues())
    seen: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        type(self).seen.append(self.path)
        if self.headers.get("Authorization") != "Bearer jira-token":
            reply = fake_jira.jira_error("unauthorized", 401)
        else:
            reply = self.site.route(httpx.Request("GET", f"http://jira{self.path}"))
        self.send_response(reply.status_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply.content)))
        self.end_headers()
        self.wfile.write(reply.content)


class Model(BaseHTTPRequestHandler):
    """A scripted model: one task search for this week, then an answer from its lines."""

    requests: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        messages = body["messages"]
        if not any(m["role"] == "tool" for m in messages):
            week = {
                "mine": True,
                "openOnly": True,
                "dueFrom": MONDAY.isoformat(),
                "dueTo": SUNDAY.isoformat(),
            }
            offered = {t["function"]["name"] for t in body.get("tools") or []}
            names = [n for n in ("searchJiraIssues", "searchClickUpTasks") if n in offered]
            calls = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(week)},
                }
                for i, name in enumerate(names)
            ]
            message, finish = (
                {"role": "assistant", "content": None, "tool_calls": calls},
                "tool_calls",
            )
        else:
            lines = [
                line
                for m in messages
                if m["role"] == "tool"
                for line in str(m.get("content") or "").splitlines()
                if line.startswith("☑️")
            ]
            answer = "Due this week:\n" + ("\n".join(lines) if lines else "nothing")
            message, finish = {"role": "assistant", "content": answer}, "stop"
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "tiny",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture
def jira_url() -> Iterator[str]:
    yield from _serve(Jira)


@pytest.fixture
def clickup_url() -> Iterator[str]:
    yield from _serve(ClickUp)


@pytest.fixture
def model_url() -> Iterator[str]:
    yield from _serve(Model)


async def _connect(jira_url: str, clickup_url: str) -> None:
    from nyla.kernel import Kernel
    from nyla.sdk.connectors import TokenGrant

    kernel = Kernel()
    try:
        await kernel.db.ensure_ready()
        await kernel.connections.add(
            "jira",
            user_id="mia",
            account="mia@example.com",
            grant=TokenGrant(
                access_token="jira-token", expires_at=datetime.now(UTC) + timedelta(hours=1)
            ),
            settings={"baseUrl": f"{jira_url}/ex/jira/cloud-1"},
        )
        await kernel.connections.add(
            "clickup",
            user_id="mia",
            account="mia@example.com",
            grant=TokenGrant(access_token=CLICKUP_TOKEN),
            settings={"baseUrl": f"{clickup_url}/api/v2"},
        )
    finally:
        await kernel.aclose()


def test_nyla_run_answers_which_open_jira_and_clickup_tasks_are_due_this_week(
    monkeypatch, tmp_path, jira_url, clickup_url, model_url, cli_database
):
    modules = (
        "nyla_provider_private_llm",
        "nyla_connector_jira",
        "nyla_toolbox_jira",
        "nyla_connector_clickup",
        "nyla_toolbox_clickup",
    )
    for module in modules:
        pytest.importorskip(module)
    from cryptography.fernet import Fernet

    monkeypatch.setenv("NYLA_PLUGINS", "private-llm,jira,jira-toolbox,clickup,clickup-toolbox")
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_PRIVATE_LLM_BASE_URL", f"{model_url}/v1")
    monkeypatch.setenv("NYLA_PRIVATE_LLM_MODELS", "tiny")
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_SECRET_KEY", Fernet.generate_key().decode())
    monkeypatch.setenv("NYLA_USER", "mia")
    # the fake services run on this machine: an operator allows them, as for an on-site server
    monkeypatch.setenv("NYLA_EGRESS_ALLOW", "127.0.0.1")
    from nyla import config

    config.reload()
    asyncio.run(_connect(jira_url, clickup_url))
    Model.requests.clear()
    Jira.seen.clear()
    ClickUp.seen.clear()

    question = "Which of my open Jira and ClickUp tasks are due this week?"
    result = CliRunner().invoke(cli, ["run", question, "--no-stream"])
    assert result.exit_code == 0, result.output
    offered = {t["function"]["name"] for t in Model.requests[0]["tools"]}
    assert {"searchJiraIssues", "readJiraIssue", "writeJiraIssue"} <= offered
    assert {"searchClickUpTasks", "readClickUpTask", "writeClickUpTask"} <= offered
    assert any("/rest/api/3/search/jql" in p for p in Jira.seen)
    assert any(p.startswith("/api/v2/team/9001/task?") for p in ClickUp.seen), ClickUp.seen
    out = " ".join(result.output.split())
    assert (
        f"☑️ ED-1 Fix checkout — status To Do; assignee Mia Krystof; due {SUNDAY.isoformat()} "
        "[id: 10001]" in out
    )
    assert (
        f"☑️ Prepare demo — status to do; assignee Mia Krystof; due {SUNDAY.isoformat()} "
        "[id: 86e1]" in out
    )
    for other in (
        "Ship release notes",
        "Budget review",
        "Update logo",
        "Close sprint",
        "Plan offsite",
        "Order swag",
    ):
        assert other not in out, f"{other} is done, later or not mine"
