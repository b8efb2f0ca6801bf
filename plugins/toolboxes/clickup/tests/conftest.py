"""Fixtures: a kernel with the ClickUp connector over the connector's fake ClickUp account
(loaded by file path: plugins never import each other's tests), the ClickUp toolbox, one
connection."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from nyla.testing import add_connection, import_file

USER = "mia"
fake_clickup = import_file(Path(__file__).parents[3] / "connectors/clickup/tests/fake_clickup.py")


def ms(day: str, hour: int = 9) -> str:
    """A due time on ``day`` (UTC hour) as ClickUp's Unix milliseconds."""
    moment = datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC)
    return str(int(moment.timestamp() * 1000))


def account() -> Any:
    """Workspace 9001, space 790: folderless list 901 (Inbox) and folder 457 with list 124."""
    fake = fake_clickup.FakeClickUp()
    fake.add_space("9001", "790", "Engineering")
    fake.add_folder("790", "457", "Releases")
    inbox = fake.add_list("790", "-", "901", "Inbox")
    sprint = fake.add_list("790", "457", "124", "Sprint 12")
    leo = fake.teams[0]["members"][1]["user"]
    rows = [  # id, name, list, due day, closed, mine
        ("86c1", "Fix checkout", inbox, "2026-01-07", False, True),
        ("86c2", "Write release notes", sprint, "2026-01-08", True, True),
        ("86c3", "Review budget", sprint, "2026-01-20", False, True),
        ("86c4", "Update logo", inbox, "2026-01-07", False, False),
    ]
    for task_id, name, ref, due, closed, mine in rows:
        task = fake_clickup.make_task(task_id, name, ref, due_date=ms(due))
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


@pytest.fixture
def clickup() -> Any:
    return account()


@pytest.fixture
def kernel(vendor_kernel: Any, clickup: Any) -> Any:
    import nyla_connector_clickup  # the tests' connector; the toolbox itself never imports it
    import nyla_toolbox_clickup

    return vendor_kernel(clickup, nyla_connector_clickup, nyla_toolbox_clickup)


@pytest_asyncio.fixture
async def connection(kernel: Any) -> Any:
    return await add_connection(
        kernel, "clickup", USER, "mia@example.com", token="pk_183_TOOLBOX", refresh_token=None
    )
