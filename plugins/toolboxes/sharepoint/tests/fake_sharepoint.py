"""SharePoint (Microsoft Graph sites and drives) faked at the wire over
``data/sharepoint.json``: site search, a site's drives, folder search, ``/search/query``,
item metadata and content."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx

DATA = json.loads((Path(__file__).parent / "data" / "sharepoint.json").read_text())
SITE = DATA["sites"][0]["id"]
DRIVE = DATA["drives"][SITE][0]["id"]


def _resource(item: dict[str, Any]) -> dict[str, Any]:
    raw = copy.deepcopy(item)
    raw.pop("content")
    return raw


def _matches(item: dict[str, Any], words: list[str]) -> bool:
    text = f"{item['name']} {item['content']}".lower()
    return all(w.lower() in text for w in words)


class FakeSharePoint:
    """The transport handler; ``requests`` records every call."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = unquote(request.url.path).removeprefix("/v1.0")
        if path == "/sites":
            q = request.url.params.get("search", "*")
            sites = [s for s in DATA["sites"] if q == "*" or q.lower() in s["displayName"].lower()]
            return httpx.Response(200, json={"value": sites})
        if m := re.fullmatch(r"/sites/([^/]+)/drives", path):
            return httpx.Response(200, json={"value": DATA["drives"].get(m.group(1), [])})
        if m := re.fullmatch(
            rf"/drives/{re.escape(DRIVE)}/root(?::/(.*):)?/search\(q='(.*)'\)", path
        ):
            folder, words = m.group(1) or "", m.group(2).replace("''", "'").split()
            hits = [
                _resource(i)
                for i in DATA["items"]
                if i["parentReference"]["path"].endswith(
                    f"root:/{folder}".rstrip("/") if folder else ""
                )
                and _matches(i, words)
            ]
            return httpx.Response(200, json={"value": hits})
        if path == "/search/query" and request.method == "POST":
            query = json.loads(request.content)["requests"][0]["query"]["queryString"]
            hits = [
                {
                    "hitId": i["id"],
                    "rank": n + 1,
                    "summary": i["content"][:40],
                    "resource": _resource(i),
                }
                for n, i in enumerate(x for x in DATA["items"] if _matches(x, query.split()))
            ]
            container = {"hits": hits, "total": len(hits), "moreResultsAvailable": False}
            return httpx.Response(
                200, json={"value": [{"searchTerms": query.split(), "hitsContainers": [container]}]}
            )
        if m := re.fullmatch(rf"/drives/{re.escape(DRIVE)}/items/([^/]+)(/content)?", path):
            item = next((i for i in DATA["items"] if i["id"] == m.group(1)), None)
            if item is None:
                return httpx.Response(
                    404,
                    json={
                        "error": {
                            "code": "itemNotFound",
                            "message": "The resource could not be found.",
                        }
                    },
                )
            if m.group(2):
                return httpx.Response(200, content=item["content"].encode())
            return httpx.Response(200, json=_resource(item))
        return httpx.Response(404, json={"error": {"code": "itemNotFound", "message": path}})
