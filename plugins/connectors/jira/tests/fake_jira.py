"""Jira Cloud REST v3 faked at the wire over issue payloads shaped as the docs show them
(``tests/data``): ``/search/jql`` with a small JQL evaluator and ``nextPageToken`` paging,
the removed ``/search`` (410 Gone), ``/myself``, ``/project/search``, one issue, its
comments and transitions, and the writes. Also loaded by the Jira toolbox's tests and the
end-to-end run (by file path: plugins never import each other).

Documented by (each operation's page is its ``x-docs`` in ``data/spec/jira-v3.json``):
https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-get,
https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/,
https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/,
https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-attachments/,
https://developer.atlassian.com/cloud/jira/platform/rate-limiting/,
https://developer.atlassian.com/changelog/#CHANGE-2046 (``/search`` removed)."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from nyla.testing.vendor_spec import VendorSpec

DATA = Path(__file__).parent / "data"
API = "/rest/api/3"
#: Jira Cloud's REST v3 description, the operations nyla calls (``data/spec/extract.py``
#: says whence and how to refresh it); every exchange with :class:`FakeJira` is checked
SPEC = DATA / "spec" / "jira-v3.json"


def jira_spec() -> VendorSpec:
    """Jira's description, compiled once (a 3LO app's paths start with
    ``/ex/jira/<cloudId>``)."""
    return VendorSpec.load(SPEC, prefix=r"^/ex/jira/[^/]+")


@cache
def _sample(name: str) -> Any:
    return json.loads((DATA / f"{name}.json").read_text())


def sample(name: str) -> Any:
    """A fresh copy of a documented payload from ``tests/data``."""
    return copy.deepcopy(_sample(name))


def jira_error(kind: str, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    """An error answer in Jira's shape (``{"errorMessages": [...], "errors": {}}``)."""
    body = sample("errors").get(kind) or {"errorMessages": [f"HTTP {status}"], "errors": {}}
    return httpx.Response(status, headers=headers, json=body)


class JqlError(Exception):
    """A clause the fake does not know (the real Jira would answer 400 as well)."""


def _parse_clause(clause: str, zone: ZoneInfo, me: str) -> Any:
    clause = clause.strip()
    if clause.startswith("(") and clause.endswith(")"):
        clause = clause[1:-1]
    if m := re.fullmatch(r'project = "([^"]+)"', clause):
        return lambda i: i["fields"]["project"]["key"] == m.group(1)
    if m := re.fullmatch(r'text ~ "((?:[^"\\]|\\.)*)"', clause):
        words = re.sub(r"\\(.)", r"\1", m.group(1)).lower().split()
        return lambda i: all(w in _text(i) for w in words)
    if m := re.fullmatch(r'updated >= "(\d{4}-\d\d-\d\d \d\d:\d\d)"', clause):
        since = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=zone)
        return lambda i: _updated(i) >= since
    if re.fullmatch(r"updated >= -\d+d", clause):
        return lambda i: True
    if clause == "assignee = currentUser()":
        return lambda i: (i["fields"].get("assignee") or {}).get("accountId") == me
    if clause == "statusCategory != Done":
        return lambda i: i["fields"]["status"]["statusCategory"]["key"] != "done"
    if m := re.fullmatch(r'duedate (>=|<=) "(\d{4}-\d\d-\d\d)"', clause):
        op, day = m.groups()
        return lambda i: (
            bool(i["fields"].get("duedate"))
            and (i["fields"]["duedate"] >= day if op == ">=" else i["fields"]["duedate"] <= day)
        )
    raise JqlError(clause)


def _text(issue: dict[str, Any]) -> str:
    f = issue["fields"]
    return f"{f.get('summary', '')} {json.dumps(f.get('description'))}".lower()


def _updated(issue: dict[str, Any]) -> datetime:
    return datetime.strptime(issue["fields"]["updated"], "%Y-%m-%dT%H:%M:%S.%f%z")


def _sorted(issues: list[dict[str, Any]], order: str) -> list[dict[str, Any]]:
    keys = [k.strip().split() for k in order.split(",") if k.strip()]
    for name, *direction in reversed(keys):
        desc = bool(direction) and direction[0].upper() == "DESC"
        if name == "duedate":  # empty due dates last, whatever the direction
            issues.sort(key=lambda i: i["fields"].get("duedate") or "", reverse=desc)
            issues.sort(key=lambda i: not i["fields"].get("duedate"))
        elif name == "updated":
            issues.sort(key=_updated, reverse=desc)
        elif name == "id":
            issues.sort(key=lambda i: int(i["id"]), reverse=desc)
    return issues


class FakeJira:
    """A Jira site: ``issues`` (payloads), comments and transitions per issue key; it
    records every request. ``generation`` invalidates page tokens when raised."""

    def __init__(self, issues: list[dict[str, Any]] | None = None, page_size: int = 50) -> None:
        self.issues = issues if issues is not None else []
        self.comments: dict[str, list[dict[str, Any]]] = {}
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}  # attachment id: meta, bytes
        self.myself = sample("myself")
        self.page_size = page_size
        self.generation = 1
        self.duplicate_boundary = False
        self.truncate_after: int | None = None
        self.requests: list[httpx.Request] = []
        self.writes: list[tuple[str, str, Any]] = []
        self._checked = jira_spec().guard(self.route)

    def attach(self, issue: dict[str, Any], att_id: str, name: str, data: bytes, mime: str) -> None:
        """An attachment on ``issue``: listed in its ``attachment`` field, served by
        ``/attachment/{id}`` (metadata) and ``/attachment/content/{id}`` (bytes)."""
        meta = sample("attachment")
        site = meta["content"].split("/rest/")[0]
        meta.update(
            {
                "id": int(att_id),
                "filename": name,
                "size": len(data),
                "mimeType": mime,
                "self": f"{site}/rest/api/3/attachments/{att_id}",
                "content": f"{site}/rest/api/3/attachment/content/{att_id}",
                "thumbnail": f"{site}/rest/api/3/attachment/thumbnail/{att_id}",
            }
        )
        self.files[att_id] = (meta, data)
        listed = {**meta, "id": att_id}  # the issue's field lists ids as strings
        issue["fields"].setdefault("attachment", []).append(listed)

    # ---- search ---------------------------------------------------------------------------

    def select(self, jql: str) -> list[dict[str, Any]]:
        """The issues ``jql`` matches, in its order (raises for unbounded or unknown JQL)."""
        where, _, order = jql.partition(" ORDER BY ")
        if not where.strip():
            raise JqlError("unbounded")
        zone = ZoneInfo(self.myself["timeZone"])
        tests = [_parse_clause(c, zone, self.myself["accountId"]) for c in where.split(" AND ")]
        hits = [i for i in self.issues if all(t(i) for t in tests)]
        return _sorted(hits, order)

    def search(self, params: httpx.QueryParams) -> httpx.Response:
        """``GET /rest/api/3/search/jql``."""
        try:
            hits = self.select(params.get("jql", ""))
        except JqlError as exc:
            return jira_error("unbounded" if str(exc) == "unbounded" else "jql", 400)
        if self.truncate_after is not None:
            hits = hits[: self.truncate_after]
        offset = 0
        if token := params.get("nextPageToken"):
            gen, _, at = token.partition(":")
            if gen != str(self.generation) or not at.isdigit():
                return jira_error("token", 400)
            offset = int(at)
        size = min(int(params.get("maxResults", 50)), self.page_size)
        start = offset - 1 if self.duplicate_boundary and offset > 0 else offset
        end = min(offset + size, len(hits))
        fields = params.get("fields", "").split(",")
        body = sample("search_jql")
        body["issues"] = [self._project(i, fields) for i in hits[start:end]]
        if end < len(hits):
            body["nextPageToken"] = f"{self.generation}:{end}"
            body["isLast"] = False
        else:
            body.pop("nextPageToken")  # Jira leaves the key out on the last page
            body["isLast"] = True
        return httpx.Response(200, json=body)

    @staticmethod
    def _project(issue: dict[str, Any], fields: list[str]) -> dict[str, Any]:
        out = {k: v for k, v in issue.items() if k != "fields"}
        if fields != ["id"]:
            out["fields"] = {k: v for k, v in issue["fields"].items() if k in fields}
        return copy.deepcopy(out)

    # ---- one issue ------------------------------------------------------------------------

    def find(self, id_or_key: str) -> dict[str, Any] | None:
        """An issue by id or key."""
        return next((i for i in self.issues if id_or_key in (i["id"], i["key"])), None)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._checked(request)  # type: ignore[no-any-return]

    def route(self, request: httpx.Request) -> httpx.Response:
        """Answer one request (without recording it)."""
        path = re.sub(r"^/ex/jira/[^/]+", "", request.url.path).removeprefix(API)
        method = request.method
        if path == "/search/jql" and method == "GET":
            return self.search(request.url.params)
        if path == "/search":
            return jira_error("gone", 410)
        if path == "/myself":
            return httpx.Response(200, json=self.myself)
        if path == "/project/search":
            return self._projects()
        if path == "/user/search":
            q = request.url.params.get("query", "").lower()
            hit = q in (self.myself["emailAddress"].lower(), self.myself["displayName"].lower())
            return httpx.Response(200, json=[self.myself] if hit else [])
        if m := re.fullmatch(r"/attachment/(content/)?(\d+)", path):
            return self._attachment(request, m.group(2), bool(m.group(1)))
        if path == "/issue" and method == "POST":
            return self._create(json.loads(request.content))
        if m := re.fullmatch(r"/issue/([^/]+)(?:/(comment|transitions))?", path):
            issue = self.find(m.group(1))
            if issue is None:
                return jira_error("not_found", 404)
            return self._issue(request, issue, m.group(2))
        return jira_error("not_found", 404)

    def _attachment(self, request: httpx.Request, att_id: str, content: bool) -> httpx.Response:
        """Metadata, or the bytes (``redirect=false``; otherwise the 303 to Atlassian's media
        service that Jira Cloud answers by default)."""
        if att_id not in self.files:
            return jira_error("not_found", 404)
        meta, data = self.files[att_id]
        if not content:
            return httpx.Response(200, json=meta)
        if request.url.params.get("redirect") != "false":
            media = f"https://api.media.atlassian.com/file/{att_id}/binary?token=signed"
            return httpx.Response(303, headers={"Location": media})
        return httpx.Response(
            200,
            content=data,
            headers={"Content-Type": meta["mimeType"], "Content-Length": str(len(data))},
        )

    def _projects(self) -> httpx.Response:
        body = sample("project_search")
        keys = sorted({i["fields"]["project"]["key"] for i in self.issues}) or ["ED"]
        template = body["values"][0]
        body["values"] = [{**template, "key": k, "name": f"Project {k}"} for k in keys]
        body["total"] = len(keys)
        return httpx.Response(200, json=body)

    def _issue(self, request: httpx.Request, issue: dict[str, Any], sub: str | None) -> Any:
        key, method = issue["key"], request.method
        if sub is None and method == "GET":
            fields = request.url.params.get("fields", "").split(",")
            return httpx.Response(200, json=self._project(issue, fields))
        if sub is None and method == "PUT":
            fields = json.loads(request.content)["fields"]
            self.writes.append(("edit", key, fields))
            issue["fields"].update(self._resolved(fields))
            self._touch(issue)
            return httpx.Response(204)
        if sub == "comment" and method == "GET":
            comments = self.comments.get(key, [])
            return httpx.Response(
                200,
                json={
                    "startAt": 0,
                    "maxResults": 100,
                    "total": len(comments),
                    "comments": comments,
                },
            )
        if sub == "comment" and method == "POST":
            comment = {**sample("comment"), "body": json.loads(request.content)["body"]}
            comment["id"] = str(10000 + sum(len(c) for c in self.comments.values()))
            self.comments.setdefault(key, []).append(comment)
            self.writes.append(("comment", key, comment["body"]))
            self._touch(issue)
            return httpx.Response(201, json=comment)
        if sub == "transitions" and method == "GET":
            return httpx.Response(200, json=sample("transitions"))
        if sub == "transitions" and method == "POST":
            wanted = json.loads(request.content)["transition"]["id"]
            move = next(t for t in sample("transitions")["transitions"] if t["id"] == wanted)
            issue["fields"]["status"] = {**issue["fields"]["status"], **move["to"]}
            self.writes.append(("transition", key, move["to"]["name"]))
            self._touch(issue)
            return httpx.Response(204)
        return jira_error("not_found", 404)

    def _resolved(self, fields: dict[str, Any]) -> dict[str, Any]:
        out = dict(fields)
        if "assignee" in out:
            out["assignee"] = (
                self.myself
                if out["assignee"]["accountId"] == self.myself["accountId"]
                else out["assignee"]
            )
        return out

    def _create(self, body: dict[str, Any]) -> httpx.Response:
        fields = body["fields"]
        project = fields["project"]["key"]
        number = 1 + sum(1 for i in self.issues if i["fields"]["project"]["key"] == project)
        issue = sample("issue")
        issue["id"] = str(20000 + len(self.issues))
        issue["key"] = f"{project}-{number}"
        issue["self"] = issue["self"].rsplit("/", 1)[0] + "/" + issue["id"]
        issue["fields"]["project"] = {**issue["fields"]["project"], "key": project}
        issue["fields"].update({"duedate": None, "assignee": None, "labels": []})
        issue["fields"].update(self._resolved({k: v for k, v in fields.items() if k != "project"}))
        self._touch(issue)
        self.issues.append(issue)
        self.writes.append(("create", issue["key"], fields))
        return httpx.Response(
            201, json={"id": issue["id"], "key": issue["key"], "self": issue["self"]}
        )

    @staticmethod
    def _touch(issue: dict[str, Any]) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
        issue["fields"]["updated"] = now
