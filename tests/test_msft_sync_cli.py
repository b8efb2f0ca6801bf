"""Through the CLI alone (issue 28): a OneDrive data source on a sub-folder of a drive whose
delta answers carry no ``parentReference.path`` (driveitem-delta, Remarks: "track items by
id") indexes exactly that folder's files, with their real paths. Graph is a fake on
localhost (the connection's ``baseUrl``, allowed by the operator's ``NYLA_EGRESS_ALLOW``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from nyla.cli import cli

DRIVE = "b!cli-drive"


def folder(item_id: str, name: str, parent: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "name": name,
        "folder": {"childCount": 1},
        "parentReference": {"driveId": DRIVE, "driveType": "business", "id": parent},
    }


def file(item_id: str, name: str, parent: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "name": name,
        "size": len(CONTENT[item_id]),
        "cTag": f'"c:{{{item_id}}},1"',
        "file": {"mimeType": "text/plain"},
        "lastModifiedDateTime": "2026-11-30T10:00:00Z",
        "parentReference": {"driveId": DRIVE, "driveType": "business", "id": parent},
    }


CONTENT = {
    "F1": b"Notes of team A about the rollout.",
    "F2": b"Notes of team B about the budget.",
    "F3": b"A deep memo about archiving.",
    "F4": b"Outside the source: must not be indexed.",
}
# files before the folders that hold them, as Graph does not promise parents first
DELTA = {
    "value": [
        {"id": "ROOT", "name": "root", "root": {}, "folder": {"childCount": 2}},
        file("F1", "notes.txt", "A"),
        file("F2", "notes.txt", "B"),
        file("F3", "memo.txt", "DEEP"),
        file("F4", "other.txt", "OTHER"),
        folder("A", "A", "REP"),
        folder("B", "B", "REP"),
        folder("DEEP", "Deep", "B"),
        folder("REP", "Reports", "ROOT"),
        folder("OTHER", "Other", "ROOT"),
    ],
    "@odata.deltaLink": "DELTA_LINK",
}
ITEMS = {raw["id"]: raw for raw in DELTA["value"]}  # type: ignore[index]


class Graph(BaseHTTPRequestHandler):
    """The few Graph calls a drive sync makes, answered as the driveItem docs show them."""

    base = ""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = unquote(self.path.split("?")[0]).removeprefix("/v1.0")
        if path == "/me/drive":
            return self._send(200, json.dumps({"id": DRIVE}).encode())
        if path == f"/drives/{DRIVE}/root/delta":
            body = json.dumps(DELTA).replace("DELTA_LINK", f"{self.base}{self.path}&token=1")
            return self._send(200, body.encode())
        parts = path.split("/")
        if len(parts) >= 5 and parts[3] == "items" and parts[4] in ITEMS:
            if path.endswith("/content"):
                return self._send(200, CONTENT[parts[4]], "text/plain")
            return self._send(200, json.dumps(ITEMS[parts[4]]).encode())
        return self._send(404, b'{"error": {"code": "itemNotFound", "message": "no"}}')


@pytest.fixture
def graph_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Graph)
    Graph.base = f"http://127.0.0.1:{server.server_address[1]}/v1.0"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield Graph.base
    finally:
        server.shutdown()


def test_a_sub_folder_of_a_drive_indexes_exactly_its_files_through_the_cli(
    monkeypatch, tmp_path, graph_url, cli_database, embedded_pg
):
    pytest.importorskip("nyla_connector_msft")
    from cryptography.fernet import Fernet

    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_SECRET_KEY", Fernet.generate_key().decode())
    monkeypatch.setenv("NYLA_EMBEDDING_MODEL", "local:hash-384")
    monkeypatch.setenv("NYLA_USER", "megan")
    monkeypatch.setenv("NYLA_EGRESS_ALLOW", "127.0.0.1")
    runner = CliRunner()
    added = runner.invoke(
        cli,
        [
            "connections",
            "add",
            "msft",
            "--token-stdin",
            "--json",
            "--setting",
            f"baseUrl={graph_url}",
        ],
        input="graph-token\n",
    )
    assert added.exit_code == 0, added.output
    connection = json.loads(added.output)["id"]
    synced = runner.invoke(cli, ["sync", "run", connection, "--path", "/drive/Reports", "--json"])
    assert synced.exit_code == 0, synced.output
    engine = create_engine(embedded_pg)
    schema = cli_database.split("search_path%3D")[1].split(",")[0]
    with engine.begin() as conn:
        rows = conn.execute(
            text(
                f'SELECT name, source_path FROM "{schema}".knowledge_file_index '
                "WHERE status = 'indexed' ORDER BY source_path"
            )
        ).all()
    engine.dispose()
    assert [path for _, path in rows] == [
        "/drive/Reports/A/notes.txt",
        "/drive/Reports/B/Deep/memo.txt",
        "/drive/Reports/B/notes.txt",
    ], rows
