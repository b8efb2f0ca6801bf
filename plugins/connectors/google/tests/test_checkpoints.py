"""Stored checkpoints of every Google sync: the shape today's nyla writes (rebuilt here key
by key, as the runner keeps it in JSON) resumes with the changes only; a checkpoint of the
wrong shape starts a full listing instead of failing the sync."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nyla.sdk.connectors import sync_pages

from .calendar_wire import CalendarWire, ContactsWire
from .drive_wire import DriveWire
from .google_wire import GmailWire, GoogleCorpus
from .test_drive import SCOPE as DRIVE_SCOPE
from .test_drive import library

#: scope -> (wire, corpus prefix, raw id, the keys today's last page stores)
KINDS: dict[str, tuple[Any, str, str, tuple[str, ...]]] = {
    "/mail/INBOX": (GmailWire, "mail:", "18c2f1a9b3e", ("historyId",)),
    "/calendar/primary": (CalendarWire, "event:primary:", "4eahs9ghkhrv", ("syncToken",)),
    "/contacts": (ContactsWire, "contact:", "c42867937209", ("syncToken",)),
    DRIVE_SCOPE: (DriveWire, "file:", "1A2b3C4d5E6f", ("token", "folders")),
}

#: a value of the wrong type under each kind's keys
BROKEN = {"historyId": ["x"], "syncToken": {"a": 1}, "token": 7, "folders": ["not", "a", "map"]}


def corpus_for(scope: str) -> GoogleCorpus:
    if scope == DRIVE_SCOPE:
        return library()
    _, prefix, raw, _ = KINDS[scope]
    corpus = GoogleCorpus(prefix, raw, page_size=3)
    for i in range(5):
        corpus.add(f"Budget {i}", f"Budget figures {i}.", scope)
    return corpus


async def run(session: Any, scope: str, checkpoint: Any) -> list[Any]:
    return [p async for p in sync_pages(session.adapter, session, scope, checkpoint)]


@pytest.mark.parametrize("scope", list(KINDS))
async def test_todays_stored_checkpoint_resumes(google, scope):
    wire, _, _, keys = KINDS[scope]
    corpus = corpus_for(scope)
    async with google(wire(), corpus) as (session, _vendor):
        last = (await run(session, scope, None))[-1].checkpoint
        stored = json.loads(json.dumps({**{k: last[k] for k in keys}, "scope": scope}))
        new = corpus.add("Late arrival", "late", scope)
        pages = await run(session, scope, stored)
    assert not any(p.full_listing for p in pages)
    assert [i.id for p in pages for i in p.items] == [new.id]


@pytest.mark.parametrize("scope", list(KINDS))
async def test_a_checkpoint_of_the_wrong_shape_starts_a_full_listing(google, scope):
    wire, _, _, keys = KINDS[scope]
    corpus = corpus_for(scope)
    async with google(wire(), corpus) as (session, _vendor):
        for stored in ({k: BROKEN[k] for k in keys}, {**{k: "x" for k in keys}, "scope": "/x"}):
            pages = await run(session, scope, stored)
            assert all(p.full_listing for p in pages)
            assert {i.id for p in pages for i in p.items} == {d.id for d in corpus.live()}
