"""The contract suites' documents as Jira issues: each request is answered by a
:class:`FakeJira` over the corpus as it is at that moment (issue ``updated`` follows the
corpus's change log, one hour per change, so ``updated >=`` cursors behave as Jira's do).
Each issue carries its document's bytes as an attachment, which is what ``download`` gets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeDoc
from nyla_connector_jira import JiraConnector

from .fake_jira import FakeJira, jira_error, jira_spec, sample

CLOUD = "11223344-a1b2-3b33-c444-def123456789"
BASE = f"https://api.atlassian.com/ex/jira/{CLOUD}"
SITE = "https://nyla-test.atlassian.net"
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def doc_issue(doc: FakeDoc, corpus: FakeCorpus) -> dict[str, Any]:
    """``doc`` as an issue payload of the documented shape."""
    seq = int(doc.id.removeprefix("doc"))
    last = max((s for s, d in corpus.log if d == doc.id), default=seq)
    project = doc.folder.strip("/") or "ED"
    issue = sample("issue")
    issue["id"] = str(10000 + seq)
    issue["key"] = f"{project}-{seq}"
    issue["self"] = f"{BASE}/rest/api/3/issue/{issue['id']}"
    f = issue["fields"]
    f["summary"] = doc.name
    f["description"] = {
        "type": "doc",
        "version": 1,
        "content": [
            {
                "type": "paragraph",
                "content": [{"type": "text", "text": doc.content.decode("utf-8", "replace")}],
            }
        ],
    }
    f["project"] = {**f["project"], "key": project, "name": f"Project {project}"}
    f["updated"] = (T0 + timedelta(hours=last)).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    f["duedate"] = doc.extra.get("due")
    return issue


class JiraWire(ConnectorWire):
    """Jira Cloud's wire for the connector and walker contracts."""

    scope = "/NYLA"
    cursors_expire = False  # the checkpoint is an `updated` time; page tokens are retried
    spec = jira_spec()

    def adapter(self) -> JiraConnector:
        return JiraConnector()

    def settings(self) -> dict[str, Any]:
        return {"baseUrl": BASE, "siteUrl": SITE}

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        jira = FakeJira([doc_issue(d, corpus) for d in corpus.live()], page_size=corpus.page_size)
        for doc, issue in zip(corpus.live(), jira.issues, strict=True):
            jira.attach(issue, attachment_of(doc), doc.name, doc.content, doc.mime)
        jira.generation = corpus.generation
        jira.duplicate_boundary = corpus.duplicate_boundary
        jira.truncate_after = corpus.truncate_after
        return jira.route(request)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        kind = {401: "unauthorized", 429: "rate", 410: "gone"}.get(status, "")
        return jira_error(kind, status, headers)

    def throttle_reply(self, seconds: int) -> httpx.Response:
        """A 429 that names only when the window resets, as an ISO 8601 time, with no
        Retry-After (developer.atlassian.com/cloud/jira/platform/rate-limiting/)."""
        reset = datetime.now(UTC) + timedelta(seconds=seconds)
        iso = reset.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return jira_error("rate", 429, {"X-RateLimit-Reset": iso})

    def item_id(self, doc: FakeDoc) -> str:
        return str(10000 + int(doc.id.removeprefix("doc")))

    def download_id(self, doc: FakeDoc) -> str:
        return f"attachment:{attachment_of(doc)}"


def attachment_of(doc: FakeDoc) -> str:
    """The id of the attachment that carries ``doc``'s bytes on its issue."""
    return str(30000 + int(doc.id.removeprefix("doc")))
