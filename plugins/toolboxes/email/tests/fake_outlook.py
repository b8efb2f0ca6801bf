"""Outlook (Microsoft Graph mail) faked at the wire over ``data/mailbox.json``: search,
folder listings, one message, attachments, drafts, send, move and flag."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx

MAILBOX = json.loads((Path(__file__).parent / "data" / "mailbox.json").read_text())


class FakeOutlook:
    """The transport handler; ``requests`` records every call, ``sent`` the sent drafts."""

    def __init__(self) -> None:
        self.messages: dict[str, dict[str, Any]] = {
            m["id"]: copy.deepcopy(m) for m in MAILBOX["messages"]
        }
        self.requests: list[httpx.Request] = []
        self.sent: list[dict[str, Any]] = []
        self.drafts = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = unquote(request.url.path).removeprefix("/v1.0")
        method = request.method
        if method == "GET" and (
            path == "/me/messages" or re.fullmatch(r"/me/mailFolders/[^/]+/messages", path)
        ):
            return self._search(request)
        if m := re.fullmatch(r"/me/messages/([^/]+)/attachments/([^/]+)(/\$value)?", path):
            return self._attachment(m.group(1), m.group(2), bool(m.group(3)))
        if m := re.fullmatch(r"/me/messages/([^/]+)/attachments", path):
            return httpx.Response(200, json={"value": MAILBOX["attachments"].get(m.group(1), [])})
        if method == "POST" and path == "/me/messages":
            return self._draft(json.loads(request.content))
        if method == "POST" and (m := re.fullmatch(r"/me/messages/([^/]+)/send", path)):
            self.sent.append(self.messages[m.group(1)])
            return httpx.Response(202)
        if method == "POST" and (m := re.fullmatch(r"/me/messages/([^/]+)/move", path)):
            moved = self.messages.pop(m.group(1))
            moved["id"] = moved["id"] + "-moved"
            moved["parentFolderId"] = json.loads(request.content)["destinationId"]
            self.messages[moved["id"]] = moved
            return httpx.Response(201, json=moved)
        if m := re.fullmatch(r"/me/messages/([^/]+)", path):
            msg = self.messages.get(m.group(1))
            if msg is None:
                return httpx.Response(
                    404,
                    json={
                        "error": {
                            "code": "ErrorItemNotFound",
                            "message": "The specified object was not found in the store.",
                        }
                    },
                )
            if method == "PATCH":
                msg.update(json.loads(request.content))
            return httpx.Response(200, json=msg)
        return httpx.Response(404, json={"error": {"code": "ResourceNotFound", "message": path}})

    def _search(self, request: httpx.Request) -> httpx.Response:
        search = request.url.params.get("$search", "").strip('"').lower()
        found = []
        for msg in self.messages.values():
            text = " ".join(
                [msg["subject"], msg["body"]["content"], json.dumps(msg["from"])]
            ).lower()
            terms = re.findall(r"(\w+):\(([^)]*)\)|(\w+):(\S+)|(\S+)", search)
            ok = True
            for f1, v1, f2, v2, word in terms:
                field, value = (f1 or f2), (v1 or v2)
                if field == "from":
                    ok &= value in json.dumps(msg["from"]).lower()
                elif field == "subject":
                    ok &= all(w in msg["subject"].lower() for w in value.split())
                elif word and not word.startswith("received"):
                    ok &= word in text
            if ok and not msg.get("isDraft"):
                found.append(msg)
        return httpx.Response(
            200,
            json={
                "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users('me')/messages",
                "value": found,
            },
        )

    def _attachment(self, message_id: str, attachment_id: str, value: bool) -> httpx.Response:
        for att in MAILBOX["attachments"].get(message_id, []):
            if att["id"] == attachment_id:
                if value:
                    return httpx.Response(
                        200, content=MAILBOX["attachmentBytes"][att["id"]].encode()
                    )
                return httpx.Response(200, json=att)
        return httpx.Response(
            404, json={"error": {"code": "ErrorItemNotFound", "message": "no attachment"}}
        )

    def _draft(self, body: dict[str, Any]) -> httpx.Response:
        self.drafts += 1
        draft = copy.deepcopy(MAILBOX["messages"][1])
        draft.update(body, id=f"AAMkDRAFT{self.drafts}", isDraft=True, parentFolderId="drafts")
        draft["from"] = {
            "emailAddress": {"name": "Megan Bowen", "address": "MeganB@contoso.onmicrosoft.com"}
        }
        self.messages[draft["id"]] = draft
        return httpx.Response(201, json=draft)
