"""Fixtures: a kernel with the Jira connector over the connector's fake Jira site (loaded by
file path: plugins never import each other's tests), the Jira toolbox, one connection."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

USER = "mia"
FAKE = Path(__file__).parents[3] / "connectors/jira/tests/fake_jira.py"


def load_fake() -> Any:
    spec = importlib.util.spec_from_file_location("fake_jira_for_toolbox", FAKE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fake_jira = load_fake()


def issues() -> list[dict[str, Any]]:
    out = []
    for i, (summary, due, done, mine) in enumerate(
        [
            ("Fix checkout", "2026-01-07", False, True),
            ("Write release notes", "2026-01-08", True, True),
            ("Review budget", "2026-01-20", False, True),
            ("Update logo", "2026-01-07", False, False),
        ],
        start=1,
    ):
        issue = fake_jira.sample("issue")
        issue["id"], issue["key"] = str(10000 + i), f"ED-{i}"
        f = issue["fields"]
        f.update({"summary": summary, "duedate": due})
        if done:
            f["status"] = {**f["status"], "name": "Done", "statusCategory": {"key": "done"}}
        if not mine:
            f["assignee"] = None
        out.append(issue)
    return out


@pytest.fixture
def jira() -> Any:
    return fake_jira.FakeJira(issues())


@pytest_asyncio.fixture
async def kernel(db: Any, jira: Any, make_kernel: Any, monkeypatch: Any) -> Any:
    from cryptography.fernet import Fernet

    import nyla_connector_jira  # the tests' connector; the toolbox itself never imports it
    import nyla_toolbox_jira

    monkeypatch.setenv("NYLA_JIRA_CLIENT_ID", "client-id")
    return make_kernel(
        nyla_connector_jira,
        nyla_toolbox_jira,
        db=db,
        builtins=False,
        settings={"secret_key": Fernet.generate_key(), "transport": httpx.MockTransport(jira)},
    )


@pytest_asyncio.fixture
async def connection(kernel: Any) -> Any:
    from nyla.sdk.connectors import TokenGrant

    return await kernel.connections.add(
        "jira",
        user_id=USER,
        account="mia@example.com",
        grant=TokenGrant(access_token="a", expires_at=datetime.now(UTC) + timedelta(hours=1)),
        settings={"baseUrl": "https://api.atlassian.com/ex/jira/cloud-1"},
    )
