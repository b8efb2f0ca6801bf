"""Connecting and syncing a local folder through the CLI sends no HTTP request, so it
imports no HTTP client: httpx pulls in its own command line (``rich``, ``pygments``) and a
TLS context with the CA bundle, ~12 MiB of a sync's peak memory (issue 32, goal 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

from localfs_helpers import make_tree

# one command in a fresh process; then which HTTP modules it imported
CHILD = """
import json, sys
from nyla.cli import cli

cli.main(args=sys.argv[1:], prog_name="nyla", standalone_mode=False)
print(json.dumps(sorted(m for m in ("httpx", "httpcore", "rich") if m in sys.modules)))
"""


def test_a_local_folder_is_connected_and_synced_without_an_http_client(
    embedded_pg, tmp_path
) -> None:
    make_tree(tmp_path / "docs", 6, per_folder=3)
    env = {
        **os.environ,
        "NYLA_DATABASE_URL": embedded_pg,
        "NYLA_DATABASE_SCHEMA": f"imports_{uuid.uuid4().hex[:8]}",
        "NYLA_EMBEDDING_MODEL": "local:hash-384",
        "NYLA_HOME": str(tmp_path / "home"),
        "NYLA_CONFIG": str(tmp_path / "config" / "config.toml"),
    }

    def nyla(*args: str) -> tuple[dict, list[str]]:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *args, "--user", "ada", "--json"],
            capture_output=True, text=True, env=env, timeout=120, check=True,
        )  # fmt: skip
        answer, imported = done.stdout.strip().rsplit("\n", 1)
        return json.loads(answer), json.loads(imported)

    added, imported = nyla("connections", "add", "localfs", "--setting", f"root={tmp_path}/docs")
    assert imported == [], "connecting a folder (its root listed) imported an HTTP client"
    synced, imported = nyla("sync", "run", added["id"])
    assert synced["itemsIndexed"] == 6 and synced["sweep"].startswith("complete")
    assert imported == [], "a local folder's sync imported an HTTP client"
