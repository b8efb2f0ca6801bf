"""Gmail faked at the wire over ``data/gmail_mailbox.json`` (messages in Gmail's documented
``format=full`` shape): messages.list with ``q=`` and ``labelIds``, messages.get (metadata /
full), attachments.get, drafts.create, drafts.send, messages.send, messages.modify."""

from __future__ import annotations

import base64
import copy
import json
import re
from email import message_from_bytes
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx

MAILBOX = json.loads((Path(__file__).parent / "data" / "gmail_mailbox.json").read_text())
BASE = "/gmail/v1/users/me"
NOT_FOUND = {
    "error": {
        "code": 404,
        "message": "Requested entity was not found.",
        "errors": [
            {"message": "Requested entity was not found.", "domain": "global", "reason": "notFound"}
        ],
        "status": "NOT_FOUND",
    }
}


def _header(msg: dict[str, Any], name: str) -> str:
    return next((h["value"] for h in msg["payload"]["headers"] if h["name"] == name), "")


class FakeGmail:
    """The transport handler; ``requests`` records every call, ``sent`` the sent MIME
    messages (parsed), ``modified`` the label changes."""

    def __init__(self) -> None:
        self.messages = {m["id"]: copy.deepcopy(m) for m in MAILBOX["messages"]}
        self.requests: list[httpx.Request] = []
        self.drafts: dict[str, bytes] = {}
        self.sent: list[Any] = []
        self.modified: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert request.url.host == "gmail.googleapis.com", request.url
        path = unquote(request.url.path).removeprefix(BASE)
        params = {k: v for k, v in parse_qs(urlsplit(str(request.url)).query).items()}
        if request.method == "GET" and path == "/messages":
            return self._list(params)
        if m := re.fullmatch(r"/messages/([^/]+)/attachments/([^/]+)", path):
            data = MAILBOX["attachmentBytes"].get(m.group(2))
            if data is None:
                return httpx.Response(404, json=NOT_FOUND)
            raw = base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")
            return httpx.Response(200, json={"size": len(data), "data": raw})
        if request.method == "POST" and path == "/drafts":
            raw = json.loads(request.content)["message"]["raw"]
            draft_id = f"r-58{len(self.drafts):03d}"
            self.drafts[draft_id] = base64.urlsafe_b64decode(raw + "==")
            msg = _as_message(f"18d0d{len(self.drafts):011x}", self.drafts[draft_id])
            self.messages[msg["id"]] = msg  # a draft's message is readable like any other
            ref = {k: msg[k] for k in ("id", "threadId", "labelIds")}
            return httpx.Response(200, json={"id": draft_id, "message": ref})
        if request.method == "POST" and path in ("/drafts/send", "/messages/send"):
            body = json.loads(request.content)
            raw = (
                self.drafts.pop(body["id"])
                if "id" in body
                else base64.urlsafe_b64decode(body["raw"] + "==")
            )
            self.sent.append(message_from_bytes(raw))
            sent = {"id": f"18d0e{len(self.sent):011x}", "threadId": "18d0e", "labelIds": ["SENT"]}
            return httpx.Response(200, json=sent)
        if request.method == "POST" and (m := re.fullmatch(r"/messages/([^/]+)/modify", path)):
            msg = self.messages.get(m.group(1))
            if msg is None:
                return httpx.Response(404, json=NOT_FOUND)
            change = json.loads(request.content)
            self.modified.append(change)
            labels = [x for x in msg["labelIds"] if x not in change.get("removeLabelIds", [])]
            msg["labelIds"] = labels + [x for x in change.get("addLabelIds", []) if x not in labels]
            return httpx.Response(200, json={k: msg[k] for k in ("id", "threadId", "labelIds")})
        if m := re.fullmatch(r"/messages/([^/]+)", path):
            msg = self.messages.get(m.group(1))
            if msg is None:
                return httpx.Response(404, json=NOT_FOUND)
            if params.get("format") == ["metadata"]:
                wanted = set(params.get("metadataHeaders", []))
                msg = copy.deepcopy(msg)
                msg["payload"] = {
                    "mimeType": msg["payload"]["mimeType"],
                    "headers": [h for h in msg["payload"]["headers"] if h["name"] in wanted],
                }
            return httpx.Response(200, json=msg)
        return httpx.Response(404, json=NOT_FOUND)

    def _list(self, params: dict[str, list[str]]) -> httpx.Response:
        label = (params.get("labelIds") or [None])[0]
        q = (params.get("q") or [""])[0]
        found = []
        for msg in self.messages.values():
            if label and label not in msg["labelIds"]:
                continue
            if not _matches(msg, q):
                continue
            found.append({"id": msg["id"], "threadId": msg["threadId"]})
        body: dict[str, Any] = {"resultSizeEstimate": len(found)}
        if found:
            body["messages"] = found
        return httpx.Response(200, json=body)


def _as_message(message_id: str, mime: bytes) -> dict[str, Any]:
    """A parsed MIME draft in Gmail's ``format=full`` shape (headers and the text part)."""
    parsed = message_from_bytes(mime)
    text = next(p for p in parsed.walk() if p.get_content_type() == "text/plain")
    body = text.get_payload(decode=True)
    headers = [{"name": k, "value": str(v)} for k, v in parsed.items()]
    return {
        "id": message_id,
        "threadId": message_id,
        "labelIds": ["DRAFT"],
        "snippet": body.decode()[:60],
        "internalDate": "1767700000000",
        "sizeEstimate": len(mime),
        "payload": {
            "partId": "",
            "mimeType": parsed.get_content_type(),
            "headers": headers,
            "body": {"size": 0},
            "parts": [
                {
                    "partId": "0",
                    "mimeType": "text/plain",
                    "filename": "",
                    "body": {
                        "size": len(body),
                        "data": base64.urlsafe_b64encode(body).decode().rstrip("="),
                    },
                }
            ],
        },
    }


def _matches(msg: dict[str, Any], q: str) -> bool:
    """A small evaluator of Gmail's operators: from:(…), subject:(…), is:unread, words."""
    for field, value in re.findall(r"(from|subject):\(([^)]*)\)", q):
        header = _header(msg, "From" if field == "from" else "Subject")
        if value.lower() not in header.lower():
            return False
    if "is:unread" in q and "UNREAD" not in msg["labelIds"]:
        return False
    rest = re.sub(r"\w+:\([^)]*\)|\w+:\S+", " ", q).split()
    text = (_header(msg, "Subject") + " " + msg["snippet"]).lower()
    return all(w.lower() in text for w in rest)
