"""``nyla run`` end to end over Microsoft 365: a scripted model (an OpenAI-compatible server
on localhost behind the private-LLM provider) searches Outlook mail and a SharePoint library
through the email and SharePoint toolboxes, which reach a fake Microsoft Graph on localhost
(the connection's ``baseUrl``) through the msft connector; its answer cites the inline
metadata the tools returned. Graph answers come from the plugins' documented samples."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from click.testing import CliRunner

from nyla.cli import cli

ROOT = Path(__file__).parent.parent
MAILBOX = json.loads((ROOT / "plugins/toolboxes/email/tests/data/mailbox.json").read_text())
SHAREPOINT = json.loads(
    (ROOT / "plugins/toolboxes/sharepoint/tests/data/sharepoint.json").read_text()
)
SITE = SHAREPOINT["sites"][0]["id"]
DRIVE = SHAREPOINT["drives"][SITE][0]["id"]
LIBRARY = f"/sites/{SITE}/{DRIVE}"


class Graph(BaseHTTPRequestHandler):
    """Microsoft Graph's mail search and drive folder search over the samples."""

    seen: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, body: Any, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path).removeprefix("/v1.0")
        type(self).seen.append(path)
        if self.headers.get("Authorization") != "Bearer graph-token":
            return self._json(
                {"error": {"code": "InvalidAuthenticationToken", "message": "no"}}, 401
            )
        if path == "/me/messages":
            search = parse_qs(url.query).get("$search", [""])[0].strip('"').lower()
            words = re.sub(r"\w+:\(?([^)\s]*)\)?", r"\1", search).split()
            hits = [
                m
                for m in MAILBOX["messages"]
                if all(w in (m["subject"] + m["body"]["content"]).lower() for w in words)
            ]
            return self._json({"value": hits})
        if m := re.fullmatch(rf"/drives/{re.escape(DRIVE)}/root:/(.+):/search\(q='(.*)'\)", path):
            folder, words = m.group(1), m.group(2).lower().split()
            hits = []
            for item in SHAREPOINT["items"]:
                text_ = f"{item['name']} {item['content']}".lower()
                if item["parentReference"]["path"].endswith(f"root:/{folder}") and all(
                    w in text_ for w in words
                ):
                    hits.append({k: v for k, v in item.items() if k != "content"})
            return self._json({"value": hits})
        return self._json({"error": {"code": "itemNotFound", "message": path}}, 404)


def _tool_lines(messages: list[dict], icon: str) -> list[str]:
    return [
        line
        for m in messages
        if m["role"] == "tool"
        for line in str(m.get("content") or "").splitlines()
        if line.startswith(icon)
    ]


class Model(BaseHTTPRequestHandler):
    """A scripted model: searches mail and the library, then answers with the lines found."""

    requests: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        messages = body["messages"]
        if not any(m["role"] == "tool" for m in messages):
            calls = [
                ("searchEmail", {"subject": "budget"}),
                ("searchSharePoint", {"query": "budget", "path": f"{LIBRARY}/Reports"}),
            ]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a)},
                    }
                    for i, (n, a) in enumerate(calls)
                ],
            }
            finish = "tool_calls"
        else:
            mail, docs = _tool_lines(messages, "✉️"), _tool_lines(messages, "📄")
            answer = f"Mail: {mail[0] if mail else 'none'}\nDocument: {docs[0] if docs else 'none'}"
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
def graph_url() -> Iterator[str]:
    yield from _serve(Graph)


@pytest.fixture
def model_url() -> Iterator[str]:
    yield from _serve(Model)


async def _connect(graph_url: str) -> None:
    from nyla.kernel import Kernel
    from nyla.sdk.connectors import TokenGrant

    kernel = Kernel()
    try:
        await kernel.db.ensure_ready()
        await kernel.connections.add(
            "msft",
            user_id="megan",
            account="MeganB@contoso.onmicrosoft.com",
            grant=TokenGrant(
                access_token="graph-token", expires_at=datetime.now(UTC) + timedelta(hours=1)
            ),
            settings={"baseUrl": f"{graph_url}/v1.0"},
        )
    finally:
        await kernel.aclose()


def test_nyla_run_searches_outlook_and_sharepoint_and_cites_metadata(
    monkeypatch, tmp_path, graph_url, model_url, cli_database
):
    for module in (
        "nyla_provider_private_llm",
        "nyla_connector_msft",
        "nyla_toolbox_email",
        "nyla_toolbox_sharepoint",
    ):
        pytest.importorskip(module)
    from cryptography.fernet import Fernet

    monkeypatch.setenv("NYLA_PLUGINS", "private-llm,msft,email-toolbox,sharepoint-toolbox")
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_PRIVATE_LLM_BASE_URL", f"{model_url}/v1")
    monkeypatch.setenv("NYLA_PRIVATE_LLM_MODELS", "tiny")
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_SECRET_KEY", Fernet.generate_key().decode())
    monkeypatch.setenv("NYLA_USER", "megan")
    # the fake services run on this machine: an operator allows them, as for an on-site server
    monkeypatch.setenv("NYLA_EGRESS_ALLOW", "127.0.0.1")
    from nyla import config

    config.reload()
    asyncio.run(_connect(graph_url))
    Model.requests.clear()
    Graph.seen.clear()

    result = CliRunner().invoke(
        cli,
        [
            "run",
            "What did Adele send about the budget, and where is the budget file?",
            "--no-stream",
        ],
    )
    assert result.exit_code == 0, result.output
    offered = {t["function"]["name"] for t in Model.requests[0]["tools"]}
    assert {"searchEmail", "searchSharePoint"} <= offered, "the msft connection switches both on"
    assert "/me/messages" in Graph.seen
    assert any(p.endswith("/root:/Reports:/search(q='budget')") for p in Graph.seen)
    mail = MAILBOX["messages"][0]
    out = " ".join(result.output.split())
    assert f"Mail: ✉️ {mail['subject']}" in out
    assert f"date {mail['receivedDateTime']}" in out
    assert "from Adele Vance <AdeleV@contoso.onmicrosoft.com>" in out
    assert f"Document: 📄 Budget 2026.csv — path {LIBRARY}/Reports/Budget 2026.csv" in out
    assert "modified 2026-01-05T09:30+00:00; by Adele Vance" in out
