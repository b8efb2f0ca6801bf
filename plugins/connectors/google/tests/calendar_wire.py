"""Google Calendar and the People API faked at the wire, from the documented event and
person samples: events.list (``q``, ``pageToken``, ``syncToken`` with ``nextSyncToken`` on
the last page, cancelled events for deletions, 410 ``fullSyncRequired`` for an expired
token), events.get; people.connections.list (``requestSyncToken``/``syncToken``,
``metadata.deleted``, 400 ``EXPIRED_SYNC_TOKEN``), people.searchContacts, people.get.

Documented by (``x-docs`` in ``data/spec/calendar-v3.json`` and ``people-v1.json``):
https://developers.google.com/calendar/api/v3/reference/events/list,
https://developers.google.com/calendar/api/guides/sync,
https://developers.google.com/people/api/rest/v1/people.connections/list,
https://developers.google.com/people/api/rest/v1/people/searchContacts."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import httpx

from nyla.testing.fake_vendor import FakeCorpus, FakeDoc
from nyla_connector_google import GoogleConnector

from .google_wire import GoogleCorpus, GoogleWire, google_error, google_spec, iso, one, sample

CALENDAR = "/calendar/v3/calendars/primary/events"
PEOPLE = "/v1/people"
#: calendarList entries as the docs show them
CALENDARS = [
    {
        "kind": "calendar#calendarListEntry",
        "id": "megan@example.com",
        "summary": "megan@example.com",
        "timeZone": "Europe/Zurich",
        "accessRole": "owner",
        "primary": True,
    },
    {
        "kind": "calendar#calendarListEntry",
        "id": "en.swiss#holiday@group.v.calendar.google.com",
        "summary": "Holidays in Switzerland",
        "accessRole": "reader",
    },
]


def event_json(doc: FakeDoc, corpus: GoogleCorpus) -> dict[str, Any]:
    """The documented event sample carrying ``doc`` (summary = name, description = text)."""
    raw = sample("calendar_event")
    raw.update(
        id=corpus.raw(doc.id),
        etag=f'"{doc.etag}"',
        summary=doc.name,
        description=doc.content.decode("utf-8", "replace"),
        updated=iso(doc),
    )
    return raw


def person_json(doc: FakeDoc, corpus: GoogleCorpus) -> dict[str, Any]:
    """The documented person sample carrying ``doc`` (name, notes = text)."""
    raw = sample("person")
    raw["resourceName"] = f"people/{corpus.raw(doc.id)}"
    raw["etag"] = f"%{doc.etag}"
    raw["metadata"]["sources"][0]["updateTime"] = iso(doc)
    raw["names"][0]["displayName"] = doc.name
    slug = re.sub(r"\W+", ".", doc.name.lower()).strip(".")
    raw["emailAddresses"][0]["value"] = f"{slug}@example.com"
    raw["biographies"] = [
        {"metadata": {"primary": True}, "value": doc.content.decode("utf-8", "replace")}
    ]
    return raw


def changed_page(
    corpus: GoogleCorpus, sync_token: str, page: str | None
) -> tuple[list[str], str | None]:
    """Ids changed since a sync token, one page; the next page token or ``None``."""
    changed = corpus.changed_since(corpus.since(sync_token))
    offset = int(page or 0)
    nxt = offset + corpus.page_size
    return changed[offset:nxt], (str(nxt) if nxt < len(changed) else None)


class CalendarWire(GoogleWire):
    """The user's primary calendar."""

    scope = "/calendar/primary"
    spec = google_spec("calendar-v3")

    def adapter(self) -> GoogleConnector:
        return GoogleConnector()

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return google_error(410, 410)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        return google_error(status, status, headers)

    def invalid_grant_reply(self) -> httpx.Response:
        return httpx.Response(400, json=sample("errors")["invalid_grant"])

    def answer(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        assert isinstance(corpus, GoogleCorpus)
        assert request.url.host == "www.googleapis.com", request.url
        path = unquote(request.url.path)
        token = one(request, "pageToken")
        if path == "/calendar/v3/users/me/calendarList":
            return httpx.Response(200, json={"kind": "calendar#calendarList", "items": CALENDARS})
        if m := re.fullmatch(rf"{CALENDAR}/([^/]+)", path):
            doc = corpus.by_raw(m.group(1))
            return (
                httpx.Response(200, json=event_json(doc, corpus)) if doc else google_error(404, 404)
            )
        if re.fullmatch(r"/calendar/v3/calendars/[^/]+/events", path) and path != CALENDAR:
            return httpx.Response(200, json={"kind": "calendar#events", "items": []})
        if path != CALENDAR:
            return google_error(404, 404)
        body: dict[str, Any] = {"kind": "calendar#events", "summary": "megan@example.com"}
        if sync := one(request, "syncToken"):
            ids, nxt = changed_page(corpus, sync, token)
            began = corpus.seq
            body["items"] = [
                event_json(corpus.docs[i], corpus)
                if i in corpus.docs
                else {"kind": "calendar#event", "id": corpus.raw(i), "status": "cancelled"}
                for i in ids
            ]
        else:
            q = one(request, "q")
            began = corpus.listing_began(token, "s" if q else "l")
            docs, nxt = corpus.search(q, token) if q else corpus.listing(token)
            body["items"] = [event_json(d, corpus) for d in docs]
        if nxt:
            body["nextPageToken"] = nxt
        else:
            # the token stands for the moment the listing began: a change made while it was
            # paged is returned by the next incremental sync, not lost between the two
            body["nextSyncToken"] = str(corpus.stamp(began))
        return httpx.Response(200, json=body)


class ContactsWire(GoogleWire):
    """The user's contacts (People API)."""

    scope = "/contacts"
    spec = google_spec("people-v1")

    def adapter(self) -> GoogleConnector:
        return GoogleConnector()

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return google_error("expiredSyncToken", 400)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        return google_error(status, status, headers)

    def invalid_grant_reply(self) -> httpx.Response:
        return httpx.Response(400, json=sample("errors")["invalid_grant"])

    def answer(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        assert isinstance(corpus, GoogleCorpus)
        assert request.url.host == "people.googleapis.com", request.url
        path = unquote(request.url.path)
        token = one(request, "pageToken")
        assert one(request, "personFields") or one(request, "readMask"), "a field mask is required"
        if path == f"{PEOPLE}:searchContacts":
            words = (one(request, "query") or "").lower().split()
            hits = [
                d
                for d in corpus.live()
                if all(w in f"{d.name} {d.content.decode()}".lower() for w in words)
            ][: int(one(request, "pageSize") or 10)]
            return httpx.Response(
                200, json={"results": [{"person": person_json(d, corpus)} for d in hits]}
            )
        if path == f"{PEOPLE}/me/connections":
            return self._connections(request, corpus, token)
        if m := re.fullmatch(rf"{PEOPLE}/([^/]+)", path):
            doc = corpus.by_raw(m.group(1))
            return (
                httpx.Response(200, json=person_json(doc, corpus))
                if doc
                else google_error(404, 404)
            )
        return google_error(404, 404)

    def _connections(
        self, request: httpx.Request, corpus: GoogleCorpus, token: str | None
    ) -> httpx.Response:
        body: dict[str, Any] = {}
        if sync := one(request, "syncToken"):
            ids, nxt = changed_page(corpus, sync, token)
            began = corpus.seq
            body["connections"] = [
                person_json(corpus.docs[i], corpus)
                if i in corpus.docs
                else {
                    "resourceName": f"people/{corpus.raw(i)}",
                    "etag": "%deleted",
                    "metadata": {"deleted": True, "objectType": "PERSON"},
                }
                for i in ids
            ]
        else:
            began = corpus.listing_began(token)
            docs, nxt = corpus.listing(token)
            body["connections"] = [person_json(d, corpus) for d in docs]
            body["totalPeople"] = body["totalItems"] = len(corpus.live())
        if nxt:
            body["nextPageToken"] = nxt
        elif one(request, "requestSyncToken") == "true":
            body["nextSyncToken"] = str(corpus.stamp(began))
        return httpx.Response(200, json=body)
