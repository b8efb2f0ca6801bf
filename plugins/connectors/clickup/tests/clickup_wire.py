"""The contract suites' documents as ClickUp tasks in a folderless list: each request is
answered by a :class:`FakeClickUp` over the corpus as it is at that moment (a task's
``date_updated`` follows the corpus's change log, one hour per change, so
``date_updated_gt`` cursors behave as ClickUp's do). Each task carries its document as an
attachment, which is what ``download`` fetches."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeDoc
from nyla_connector_clickup import ClickUpConnector

from .fake_clickup import FakeClickUp, clickup_error, clickup_spec, make_task

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
SCOPE = "/9001/790/-/901"


def task_id(doc: FakeDoc) -> str:
    """The ClickUp task id of a corpus document."""
    return f"86d{int(doc.id.removeprefix('doc')):05d}"


def account(corpus: FakeCorpus) -> FakeClickUp:
    """The account as it is now: workspace 9001, space 790 with a folder (empty) and the
    folderless list 901 holding one task per live document."""
    fake = FakeClickUp(page_size=corpus.page_size)
    fake.add_space("9001", "790", "Engineering")
    fake.add_folder("790", "457", "Releases")
    fake.add_list("790", "457", "124", "Sprint 12")
    ref = fake.add_list("790", "-", "901", "Reports")
    for doc in corpus.live():
        seq = int(doc.id.removeprefix("doc"))
        last = max((s for s, d in corpus.log if d == doc.id), default=seq)
        updated = T0 + timedelta(hours=last)
        task = make_task(
            task_id(doc),
            doc.name,
            ref,
            text_content=doc.content.decode("utf-8", "replace"),
            description=doc.content.decode("utf-8", "replace"),
            date_updated=str(int(updated.timestamp() * 1000)),
            # created in the corpus' order, a minute apart
            date_created=str(int((T0 + timedelta(minutes=seq)).timestamp() * 1000)),
            due_date=None,
            tags=[],
        )
        fake.attach(task, doc.name, doc.content, doc.mime)
        fake.tasks.append(task)
    fake.duplicate_boundary = corpus.duplicate_boundary
    fake.truncate_after = corpus.truncate_after
    return fake


class ClickUpWire(ConnectorWire):
    """ClickUp's wire for the connector and walker contracts."""

    scope = SCOPE
    cursors_expire = False  # the checkpoint is a `date_updated` time
    spec = clickup_spec()

    def adapter(self) -> ClickUpConnector:
        return ClickUpConnector()

    def settings(self) -> dict[str, Any]:
        return {"timeZone": "Europe/Zurich"}

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        return account(corpus).route(request)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        kind = {401: "unauthorized", 429: "rate", 404: "not_found"}.get(status, "bad_request")
        return clickup_error(kind, status, headers)

    def throttle_reply(self, seconds: int) -> httpx.Response:
        """A 429 with ClickUp's rate-limit headers, the reset in Unix seconds and no
        Retry-After (developer.clickup.com/docs/rate-limits)."""
        headers = {
            "X-RateLimit-Limit": "100",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(int(time.time()) + seconds),
        }
        return clickup_error("rate", 429, headers)

    def item_id(self, doc: FakeDoc) -> str:
        return task_id(doc)

    def download_id(self, doc: FakeDoc) -> str:
        return f"attachment:{task_id(doc)}:{task_id(doc)}-1"
