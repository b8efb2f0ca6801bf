"""ClickUp API v2 faked at the wire over payloads shaped as ClickUp's docs show them
(``tests/data``): the hierarchy (``/team``, spaces, folders, lists, folderless lists), the
task endpoints of a list and of a workspace (``page`` / ``last_page``, the filters the
adapter sends), one task, comments (25 newest per page, ``start``/``start_id`` back),
attachments on their own host, the writes, and ClickUp's rate limit: 100 requests per
minute per token, then 429 with ``X-RateLimit-Reset``. Also loaded by the ClickUp toolbox's
tests and the end-to-end run (by file path: plugins never import each other).

Documented by (each operation's page is its ``x-docs`` in ``data/spec/clickup-v2.json``):
https://developer.clickup.com/reference/gettasks,
https://developer.clickup.com/reference/getfilteredteamtasks,
https://developer.clickup.com/reference/gettask,
https://developer.clickup.com/reference/gettaskcomments,
https://developer.clickup.com/reference/getauthorizedteams,
https://developer.clickup.com/docs/rate-limits, https://developer.clickup.com/docs/common_errors."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import httpx

import nyla_connector_clickup.search
from nyla.testing.vendor_spec import VendorSpec

DATA = Path(__file__).parent / "data"
API = "/api/v2"
#: ClickUp's API v2 description, the operations nyla calls (``data/spec/extract.py`` says
#: whence and how to refresh it); every exchange with :class:`FakeClickUp` is checked
SPEC = DATA / "spec" / "clickup-v2.json"
ATTACHMENT_HOST = "t9001.p.clickup-attachments.com"
#: requests per minute per token (Free Forever, Unlimited and Business plans)
RATE = 100


@cache
def _sample(name: str) -> Any:
    return json.loads((DATA / f"{name}.json").read_text())


def sample(name: str) -> Any:
    """A fresh copy of a documented payload from ``tests/data``."""
    return copy.deepcopy(_sample(name))


def clickup_spec() -> VendorSpec:
    """ClickUp's description, compiled once (its paths start after ``/api``)."""
    return VendorSpec.load(SPEC, prefix=r"^/api")


def clickup_error(kind: str, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    """An error answer in ClickUp's shape (``{"err": ..., "ECODE": ...}``)."""
    body = sample("errors").get(kind) or {"err": f"HTTP {status}", "ECODE": "APP_001"}
    return httpx.Response(status, headers=headers, json=body)


def make_task(task_id: str, name: str, ref: dict[str, str], **fields: Any) -> dict[str, Any]:
    """A task payload of the documented shape in the list ``ref`` (team, space, folder,
    list ids and names; ``folder`` ``-`` for a folderless list)."""
    task = sample("task")
    task.update({"id": task_id, "name": name, "url": f"https://app.clickup.com/t/{task_id}"})
    # tasks are not all created in one millisecond: a stable time per id (the wire rebuilds
    # its tasks on every request, so it must not change between requests)
    spread = int(hashlib.sha1(task_id.encode()).hexdigest()[:8], 16) % 1_000_000
    task["date_created"] = str(int(task["date_created"]) + 60_000 * spread)
    task["team_id"] = ref["team"]
    task["list"] = {"id": ref["list"], "name": ref.get("list_name", "List"), "access": True}
    hidden = ref["folder"] == "-"
    folder = {
        "id": ref.get("folder_id", ref["folder"]) if not hidden else f"h{ref['list']}",
        "name": "hidden" if hidden else ref.get("folder_name", "Folder"),
        "hidden": hidden,
        "access": True,
    }
    task["folder"] = task["project"] = folder
    task["space"] = {"id": ref["space"]}
    task["attachments"] = []
    task.update(fields)
    return task


class FakeClickUp:
    """A ClickUp account: workspaces with spaces, folders and lists, ``tasks`` (payloads),
    comments per task, attachment bytes per URL. Records every request; ``clock`` drives
    the per-token rate limit (``None``: no limit)."""

    def __init__(self, tasks: list[dict[str, Any]] | None = None, page_size: int = 100) -> None:
        self.teams = sample("teams")["teams"]
        self.spaces: dict[str, list[dict[str, Any]]] = {}
        self.folders: dict[str, list[dict[str, Any]]] = {}
        self.lists: dict[str, list[dict[str, Any]]] = {}  # folder id, or "space:<id>"
        self.tasks = tasks if tasks is not None else []
        self.comments: dict[str, list[dict[str, Any]]] = {}
        self.files: dict[str, bytes] = {}
        self.user = sample("user")
        self.page_size = page_size
        self.duplicate_boundary = False
        self.truncate_after: int | None = None
        self.clock: Callable[[], float] | None = None
        self.sent: dict[str, list[float]] = {}
        self.throttled = 0
        self.requests: list[httpx.Request] = []
        self.writes: list[tuple[str, str, Any]] = []
        self._checked = clickup_spec().guard(self._answer)

    @property
    def page_size(self) -> int:
        """Tasks per page of the task endpoints (ClickUp's is 100)."""
        return self._page_size

    @page_size.setter
    def page_size(self, size: int) -> None:
        # Get Filtered Team Tasks answers no last_page: a client knows the last page by its
        # being short of a full page, so the connector is told how full this fake's pages are
        self._page_size = size
        nyla_connector_clickup.search.PAGE_SIZE = size

    # ---- building the account -------------------------------------------------------------

    def add_space(self, team: str, space_id: str, name: str) -> None:
        """A space in a workspace (its statuses from the documented sample)."""
        space = {**sample("spaces")["spaces"][0], "id": space_id, "name": name}
        self.spaces.setdefault(team, []).append(space)

    def add_folder(self, space: str, folder_id: str, name: str) -> None:
        """A folder in a space."""
        folder = {**sample("folders")["folders"][0], "id": folder_id, "name": name}
        folder["space"] = {"id": space, "name": "Space", "access": True}
        self.folders.setdefault(space, []).append(folder)

    def add_list(self, space: str, folder: str, list_id: str, name: str) -> dict[str, str]:
        """A list in a folder, or folderless (``folder`` ``-``); returns its task ref."""
        row = {**sample("lists")["lists"][0], "id": list_id, "name": name}
        row["space"] = {"id": space, "name": "Space", "access": True}
        if folder == "-":
            row["folder"] = {"id": f"h{list_id}", "name": "hidden", "hidden": True, "access": True}
            self.lists.setdefault(f"space:{space}", []).append(row)
        else:
            row["folder"] = {"id": folder, "name": "Folder", "hidden": False, "access": True}
            self.lists.setdefault(folder, []).append(row)
        team = next(t for t, rows in self.spaces.items() if any(s["id"] == space for s in rows))
        return {"team": team, "space": space, "folder": folder, "list": list_id, "list_name": name}

    def attach(self, task: dict[str, Any], name: str, content: bytes, mime: str) -> str:
        """An attachment on ``task`` served from ClickUp's attachment host; returns its id."""
        att = copy.deepcopy(sample("task")["attachments"][0])
        att_id = f"{task['id']}-{len(task.get('attachments') or []) + 1}"
        url = f"https://{ATTACHMENT_HOST}/t9001/{att_id}/{name}"
        att.update(
            {
                "id": att_id,
                "title": name,
                "url": url,
                "size": len(content),
                "mimetype": mime,
                "parent_id": task["id"],
            }
        )
        att["extension"] = name.rsplit(".", 1)[-1]
        task.setdefault("attachments", []).append(att)
        self.files[url] = content
        return att_id

    # ---- answering ------------------------------------------------------------------------

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._checked(request)  # type: ignore[no-any-return]

    def _answer(self, request: httpx.Request) -> httpx.Response:
        limited = self._rate(request)
        return limited if limited is not None else self.route(request)

    def _rate(self, request: httpx.Request) -> httpx.Response | None:
        """ClickUp's per-token limit: the 101st request within a minute gets 429."""
        if self.clock is None:
            return None
        now = self.clock()
        token = request.headers.get("authorization", "")
        window = [t for t in self.sent.get(token, []) if t > now - 60]
        reset = (window[0] + 60) if window else now + 60
        headers = {
            "X-RateLimit-Limit": str(RATE),
            "X-RateLimit-Remaining": str(max(0, RATE - len(window) - 1)),
            "X-RateLimit-Reset": str(int(time.time() + (reset - now)) + 1),
        }
        if len(window) >= RATE:
            self.throttled += 1
            self.sent[token] = window
            return clickup_error("rate", 429, headers)
        self.sent[token] = [*window, now]
        return None

    def route(self, request: httpx.Request) -> httpx.Response:
        """Answer one request (without counting it)."""
        if request.url.host == ATTACHMENT_HOST:
            data = self.files.get(str(request.url).split("?")[0])
            if data is None:
                return clickup_error("not_found", 404)
            return httpx.Response(200, content=data, headers={"Content-Length": str(len(data))})
        path = request.url.path
        path = path[path.index(API) + len(API) :] if API in path else path
        params, method = request.url.params, request.method
        if path == "/user":
            return httpx.Response(200, json=self.user)
        if path == "/team":
            return httpx.Response(200, json={"teams": self.teams})
        if m := re.fullmatch(r"/team/(\w+)/space", path):
            if not any(t["id"] == m.group(1) for t in self.teams):
                return clickup_error("team_not_authorized", 401)
            return httpx.Response(200, json={"spaces": self.spaces.get(m.group(1), [])})
        if m := re.fullmatch(r"/space/(\w+)/folder", path):
            return httpx.Response(200, json={"folders": self.folders.get(m.group(1), [])})
        if m := re.fullmatch(r"/folder/(\w+)/list", path):
            return httpx.Response(200, json={"lists": self.lists.get(m.group(1), [])})
        if m := re.fullmatch(r"/space/(\w+)/list", path):
            return httpx.Response(200, json={"lists": self.lists.get(f"space:{m.group(1)}", [])})
        if m := re.fullmatch(r"/team/(\w+)/task", path):
            hits = [t for t in self.tasks if t["team_id"] == m.group(1)]
            return self._page(self._filter(hits, params), params, flagged=False)
        if m := re.fullmatch(r"/list/(\w+)/task", path):
            if method == "POST":
                return self._create(m.group(1), json.loads(request.content))
            hits = [t for t in self.tasks if t["list"]["id"] == m.group(1)]
            return self._page(self._filter(hits, params), params)
        if m := re.fullmatch(r"/task/(\w+)(/comment)?", path):
            task = next((t for t in self.tasks if t["id"] == m.group(1)), None)
            if task is None:
                return clickup_error("task_not_found", 404)
            return self._task(request, task, bool(m.group(2)))
        return clickup_error("not_found", 404)

    def _filter(self, tasks: list[dict[str, Any]], params: httpx.QueryParams) -> list[dict]:
        def ms(value: Any) -> int:
            return int(value) if value not in (None, "") else 0

        def keep(t: dict[str, Any]) -> bool:
            lists, spaces = params.get_list("list_ids[]"), params.get_list("space_ids[]")
            folders, people = params.get_list("project_ids[]"), params.get_list("assignees[]")
            if lists and t["list"]["id"] not in lists:
                return False
            if spaces and t["space"]["id"] not in spaces:
                return False
            if folders and t["folder"]["id"] not in folders:
                return False
            if people and not {str(a["id"]) for a in t["assignees"]} & set(people):
                return False
            if params.get("include_closed") != "true" and t["status"]["type"] == "closed":
                return False
            for key, field, op in (
                ("date_updated_gt", "date_updated", 1),
                ("date_created_gt", "date_created", 1),
                ("due_date_gt", "due_date", 1),
                ("due_date_lt", "due_date", -1),
            ):
                if key in params:
                    if t.get(field) in (None, ""):
                        return False
                    diff = ms(t[field]) - int(params[key])
                    if diff * op <= 0:
                        return False
            return True

        hits = [t for t in tasks if keep(t)]
        order = params.get("order_by", "created")
        field = {"updated": "date_updated", "due_date": "due_date", "id": "id"}.get(
            order, "date_created"
        )
        # default: newest first; reverse=true: oldest first (undated last either way)
        hits.sort(
            key=lambda t: (ms(t.get(field)) if field != "id" else t["id"], t["id"]),
            reverse=params.get("reverse") != "true",
        )
        hits.sort(key=lambda t: t.get(field) in (None, ""))
        return hits

    def _page(
        self, hits: list[dict[str, Any]], params: httpx.QueryParams, flagged: bool = True
    ) -> httpx.Response:
        """A page of tasks; ``flagged``: with ``last_page``, which Get Tasks documents and Get
        Filtered Team Tasks does not (https://developer.clickup.com/reference/gettasks,
        https://developer.clickup.com/reference/getfilteredteamtasks)."""
        if self.truncate_after is not None:
            hits = hits[: self.truncate_after]
        page = int(params.get("page", 0))
        offset = page * self.page_size
        start = offset - 1 if self.duplicate_boundary and offset > 0 else offset
        end = min(offset + self.page_size, len(hits))
        body = sample("tasks")
        # only Get Task answers a task's attachments; the listings' task schema has none
        # (https://developer.clickup.com/reference/gettasks)
        rows = copy.deepcopy(hits[start:end])
        body["tasks"] = [{k: v for k, v in t.items() if k != "attachments"} for t in rows]
        body["last_page"] = end >= len(hits)
        if not flagged:
            del body["last_page"]
        return httpx.Response(200, json=body)

    def _task(self, request: httpx.Request, task: dict[str, Any], comments: bool) -> Any:
        if not comments and request.method == "GET":
            return httpx.Response(200, json=copy.deepcopy(task))
        if not comments and request.method == "PUT":
            return self._update(task, json.loads(request.content))
        if request.method == "POST":
            body = json.loads(request.content)
            made = sample("comment_created")
            made["id"] = str(90130000 + sum(len(c) for c in self.comments.values()))
            row = {
                **sample("comments")["comments"][0],
                "id": made["id"],
                "comment": [{"text": body["comment_text"]}],
                "comment_text": body["comment_text"],
                "date": str(made["date"]),
            }
            row["user"] = {
                **row["user"],
                **{k: self.user["user"][k] for k in ("id", "username", "email")},
            }
            self.comments.setdefault(task["id"], []).append(row)
            self.writes.append(("comment", task["id"], body["comment_text"]))
            self._touch(task)
            return httpx.Response(200, json=made)
        rows = sorted(self.comments.get(task["id"], []), key=lambda c: -int(c["date"]))
        if "start" in request.url.params:
            start = int(request.url.params["start"])
            rows = [c for c in rows if int(c["date"]) < start]
        return httpx.Response(200, json={"comments": rows[:25]})

    def _statuses(self, task: dict[str, Any]) -> dict[str, dict[str, Any]]:
        space = (
            next(s for rows in self.spaces.values() for s in rows if s["id"] == task["space"]["id"])
            if self.spaces
            else sample("spaces")["spaces"][0]
        )
        return {s["status"]: s for s in space["statuses"]}

    def _apply(self, task: dict[str, Any], body: dict[str, Any]) -> httpx.Response | None:
        if "status" in body:
            statuses = self._statuses(task)
            if body["status"] not in statuses:
                return clickup_error("status", 400)
            s = statuses[body["status"]]
            task["status"] = {
                "status": s["status"],
                "color": s["color"],
                "orderindex": s["orderindex"],
                "type": s["type"],
            }
        if "name" in body:
            task["name"] = body["name"]
        if "description" in body:
            task["description"] = task["text_content"] = body["description"]
        if "due_date" in body:
            task["due_date"] = str(body["due_date"]) if body["due_date"] else None
        if "priority" in body:
            names = {1: "urgent", 2: "high", 3: "normal", 4: "low"}
            task["priority"] = {
                "id": str(body["priority"]),
                "priority": names[body["priority"]],
                "color": "#ffcc00",
                "orderindex": str(body["priority"]),
            }
        if "assignees" in body:
            add = (
                body["assignees"]["add"]
                if isinstance(body["assignees"], dict)
                else body["assignees"]
            )
            members = {m["user"]["id"]: m["user"] for t in self.teams for m in t["members"]}
            task["assignees"] += [members[i] for i in add if i in members]
        self._touch(task)
        return None

    def _update(self, task: dict[str, Any], body: dict[str, Any]) -> httpx.Response:
        error = self._apply(task, body)
        if error is not None:
            return error
        self.writes.append(("update", task["id"], body))
        return httpx.Response(200, json=copy.deepcopy(task))

    def _create(self, list_id: str, body: dict[str, Any]) -> httpx.Response:
        row = next((r for rows in self.lists.values() for r in rows if r["id"] == list_id), None)
        if row is None:
            return clickup_error("not_found", 404)
        folder = "-" if row["folder"].get("hidden") else row["folder"]["id"]
        team = next(
            t for t, rows in self.spaces.items() for s in rows if s["id"] == row["space"]["id"]
        )
        ref = {
            "team": team,
            "space": row["space"]["id"],
            "folder": folder,
            "list": list_id,
            "list_name": row["name"],
        }
        task = make_task(
            f"86c1{len(self.tasks):04d}",
            body["name"],
            ref,
            assignees=[],
            due_date=None,
            tags=[],
            priority=None,
        )
        error = self._apply(task, {k: v for k, v in body.items() if k != "name"})
        if error is not None:
            return error
        self.tasks.append(task)
        self.writes.append(("create", task["id"], body))
        # Create Task answers the task without attachments
        # (https://developer.clickup.com/reference/createtask)
        made = {k: v for k, v in copy.deepcopy(task).items() if k != "attachments"}
        return httpx.Response(200, json=made)

    @staticmethod
    def _touch(task: dict[str, Any]) -> None:
        task["date_updated"] = str(int(time.time() * 1000))
