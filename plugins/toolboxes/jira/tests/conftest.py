"""Fixtures: a kernel with the Jira connector over the connector's fake Jira site (loaded by
file path: plugins never import each other's tests), the Jira toolbox, one connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from nyla.testing import add_connection, import_file

USER = "mia"
fake_jira = import_file(Path(__file__).parents[3] / "connectors/jira/tests/fake_jira.py")


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


@pytest.fixture
def kernel(vendor_kernel: Any, jira: Any) -> Any:
    import nyla_connector_jira  # the tests' connector; the toolbox itself never imports it
    import nyla_toolbox_jira

    env = {"NYLA_JIRA_CLIENT_ID": "client-id"}
    return vendor_kernel(jira, nyla_connector_jira, nyla_toolbox_jira, env=env)


@pytest_asyncio.fixture
async def connection(kernel: Any) -> Any:
    cloud = {"baseUrl": "https://api.atlassian.com/ex/jira/cloud-1"}
    return await add_connection(kernel, "jira", USER, "mia@example.com", settings=cloud)
