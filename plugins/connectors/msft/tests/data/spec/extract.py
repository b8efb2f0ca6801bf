"""Cut ``graph-v1.json`` (the operations nyla calls) out of Microsoft Graph's CSDL metadata.

Graph v1.0 describes itself at https://graph.microsoft.com/v1.0/$metadata; Microsoft keeps
the document in the public repository microsoftgraph/msgraph-metadata
(``schemas/v1.0-Prod.csdl``; its ``openapi/v1.0/openapi.yaml`` is generated from it). The
copy used is named in ``SOURCE``; to refresh, fetch the document and run::

    python extract.py v1.0-Prod.csdl [repository path commit]
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from nyla.testing.spec_csdl import GraphPath, csdl_subset
from nyla.testing.spec_extract import write_spec

SOURCE = {
    "url": "https://graph.microsoft.com/v1.0/$metadata",
    "repository": "microsoftgraph/msgraph-metadata",
    "path": "schemas/v1.0-Prod.csdl",
    "commit": "f54f11b60956ea7b185ca0447b2b80805836ec7b",
}
DOCS = "https://learn.microsoft.com/en-us/graph/api"
ITEM = "/drives/{drive-id}/items/{item-id}"
BY_PATH = "/drives/{drive-id}/root:/{+item-path}:"
TOKEN = {"token": {"type": "string"}}

PATHS = [
    GraphPath("GET", "/me", f"{DOCS}/user-get"),
    GraphPath("GET", "/me/drive", f"{DOCS}/drive-get"),
    # sites: GET /sites?search={query} (site-search)
    GraphPath("GET", "/sites", f"{DOCS}/site-search", query={"search": {"type": "string"}}),
    GraphPath("GET", "/sites/{site-id}/drives", f"{DOCS}/drive-list"),
    GraphPath("GET", "/drives/{drive-id}/root/children", f"{DOCS}/driveitem-list-children"),
    GraphPath("GET", f"{BY_PATH}/children", f"{DOCS}/driveitem-list-children"),
    GraphPath("GET", f"{ITEM}/children", f"{DOCS}/driveitem-list-children"),
    GraphPath("GET", "/me/drive/root/children", f"{DOCS}/driveitem-list-children"),
    GraphPath("GET", "/me/drive/root:/{+item-path}:/children", f"{DOCS}/driveitem-list-children"),
    GraphPath("GET", "/drives/{drive-id}/root/search(q='{q}')", f"{DOCS}/driveitem-search"),
    GraphPath("GET", f"{BY_PATH}/search(q='{{q}}')", f"{DOCS}/driveitem-search"),
    GraphPath("GET", "/me/drive/root/search(q='{q}')", f"{DOCS}/driveitem-search"),
    GraphPath("POST", "/search/query", f"{DOCS}/search-query", status=200),
    GraphPath("GET", ITEM, f"{DOCS}/driveitem-get"),
    # content answers 302 to a download URL, or the bytes (driveitem-get-content)
    GraphPath("GET", f"{ITEM}/content", f"{DOCS}/driveitem-get-content", also=(302,)),
    GraphPath("GET", "/drives/{drive-id}/root/delta", f"{DOCS}/driveitem-delta", query=TOKEN),
    GraphPath("GET", "/me/drive/root/delta", f"{DOCS}/driveitem-delta", query=TOKEN),
    GraphPath("GET", "/me/messages", f"{DOCS}/user-list-messages"),
    GraphPath("GET", "/me/mailFolders", f"{DOCS}/user-list-mailfolders"),
    GraphPath("GET", "/me/mailFolders/{folder-id}/messages", f"{DOCS}/user-list-messages"),
    GraphPath("GET", "/me/mailFolders/{folder-id}/messages/delta", f"{DOCS}/message-delta"),
    GraphPath("GET", "/me/messages/{message-id}", f"{DOCS}/message-get"),
    GraphPath("GET", "/me/messages/{message-id}/$value", f"{DOCS}/message-get"),
    GraphPath("GET", "/me/messages/{message-id}/attachments", f"{DOCS}/message-list-attachments"),
    GraphPath("GET", "/me/messages/{message-id}/attachments/{id}", f"{DOCS}/attachment-get"),
    GraphPath("GET", "/me/messages/{message-id}/attachments/{id}/$value", f"{DOCS}/attachment-get"),
    GraphPath("POST", "/me/messages", f"{DOCS}/user-post-messages"),
    GraphPath("POST", "/me/messages/{message-id}/send", f"{DOCS}/message-send", status=202),
    GraphPath("POST", "/me/messages/{message-id}/move", f"{DOCS}/message-move", status=201),
    GraphPath("PATCH", "/me/messages/{message-id}", f"{DOCS}/message-update"),
    GraphPath("GET", "/me/calendars", f"{DOCS}/user-list-calendars"),
    GraphPath(
        "GET",
        "/me/calendarView",
        f"{DOCS}/user-list-calendarview",
        query={"startDateTime": {"type": "string"}, "endDateTime": {"type": "string"}},
    ),
    GraphPath(
        "GET",
        "/me/calendars/{calendar-id}/calendarView",
        f"{DOCS}/calendar-list-calendarview",
        query={"startDateTime": {"type": "string"}, "endDateTime": {"type": "string"}},
    ),
    GraphPath("GET", "/me/events", f"{DOCS}/user-list-events"),
    GraphPath("GET", "/me/events/{event-id}", f"{DOCS}/event-get"),
    GraphPath("GET", "/me/contacts", f"{DOCS}/user-list-contacts"),
    GraphPath("GET", "/me/contacts/{contact-id}", f"{DOCS}/contact-get"),
    GraphPath(
        "GET", "/me/contactFolders/{folder-id}/contacts", f"{DOCS}/contactfolder-list-contacts"
    ),
]

#: Graph's error answer (https://learn.microsoft.com/en-us/graph/errors), for any status it
#: lists there
VENDOR = {
    "errors": {
        "statuses": [
            400,
            401,
            403,
            404,
            405,
            406,
            409,
            410,
            412,
            413,
            416,
            422,
            423,
            429,
            500,
            501,
            502,
            503,
            504,
            507,
            509,
        ],
        "docs": "https://learn.microsoft.com/en-us/graph/errors",
        "schema": {
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                        "target": {"type": "string"},
                        "details": {"type": "array"},
                        "innerError": {"type": "object", "additionalProperties": True},
                    },
                }
            },
        },
    },
    "hosts": ["graph.microsoft.com"],
    "projection": "odata-select",
}


#: a search hit's resource is typed only as an entity; nyla asks for driveItems only
#: (entityTypes, https://learn.microsoft.com/en-us/graph/api/search-query)
NARROW = {"microsoft.graph.entity": ["microsoft.graph.driveItem"]}


def main(argv: list[str]) -> None:
    """Write the subset beside this script."""
    raw = Path(argv[1]).read_bytes()
    source = {**SOURCE, "sha256": hashlib.sha256(raw).hexdigest()}
    if len(argv) == 5:
        source.update(repository=argv[2], path=argv[3], commit=argv[4])
    spec = csdl_subset(raw.decode("utf-8"), PATHS, source=source, vendor=VENDOR, narrow=NARROW)
    write_spec(Path(__file__).with_name("graph-v1.json"), spec)


if __name__ == "__main__":
    main(sys.argv)
