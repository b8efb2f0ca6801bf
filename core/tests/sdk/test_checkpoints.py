"""The SDK's checkpoint models and paging helpers, apart from any connector."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from nyla.sdk.connectors import (
    Checkpoint,
    DeltaCheckpoint,
    SinceCheckpoint,
    odata_pages,
    token_pages,
)


class Linked(DeltaCheckpoint):
    cursor: str | None = Field(None, validation_alias="link", serialization_alias="link")


class Counted(Checkpoint):
    offset: int = 0


def test_nothing_a_wrong_type_or_another_scope_loads_fresh() -> None:
    assert Counted.load(None) == Counted.load({}) == Counted()
    assert Counted.load({"offset": "many"}) == Counted()
    assert Counted.load(["not", "a", "mapping"]) == Counted()  # type: ignore[arg-type]
    assert Counted.load({"offset": 3, "scope": "/a"}, scope="/b") == Counted()


def test_unknown_keys_are_ignored_and_the_scope_is_recorded() -> None:
    loaded = Counted.load({"offset": 3, "added_by_a_newer_nyla": True}, scope="/a")
    assert (loaded.offset, loaded.scope) == (3, "/a")
    assert json.loads(json.dumps(loaded.dump())) == {"offset": 3, "scope": "/a"}


def test_a_delta_checkpoint_keeps_its_stored_key() -> None:
    stored = {"link": "https://graph/delta?token=1", "full": False}
    state = Linked.load(stored)
    assert not state.listing_all and state.cursor == stored["link"]
    assert state.then("next", more=True).dump() == {"scope": None, "link": "next", "full": False}
    assert Linked.load({}).then("next", more=True).dump()["full"] is True


def test_since_reads_a_finished_run_and_one_stopped_between_pages() -> None:
    done = SinceCheckpoint.load({"since": "2026-01-05T15:00:00+00:00"})
    assert not done.listing_all and done.start == done.newest == datetime(
        2026, 1, 5, 15, tzinfo=UTC
    )
    stopped = SinceCheckpoint.load({"full": False, "bound": "2026-01-05T15:00:00+00:00"})
    assert not stopped.listing_all, "an incremental run stopped between pages stays one"
    assert SinceCheckpoint.load({"full": True, "bound": None}).listing_all
    assert done.dump()["since"] == "2026-01-05T15:00:00+00:00"


async def test_odata_pages_follow_next_links_with_the_query_only_first() -> None:
    asked: list[tuple[str, Any]] = []
    bodies = {"/a": {"@odata.nextLink": "/b"}, "/b": {"@odata.nextLink": "/c"}, "/c": {}}

    async def get(url: str, params: dict[str, str] | None) -> Any:
        asked.append((url, params))
        return bodies[url]

    pages = [body async for body in odata_pages(get, "/a", {"$top": "2"})]
    assert len(pages) == 3 and asked == [("/a", {"$top": "2"}), ("/b", None), ("/c", None)]


async def test_token_pages_start_at_a_token_and_stop_without_one() -> None:
    asked: list[dict[str, Any]] = []

    async def get(params: dict[str, Any]) -> Any:
        asked.append(params)
        return {"nextPageToken": "t3"} if params.get("pageToken") == "t2" else {}

    pages = [body async for body in token_pages(get, {"q": "x"}, start="t2")]
    assert len(pages) == 2 and asked == [
        {"q": "x", "pageToken": "t2"},
        {"q": "x", "pageToken": "t3"},
    ]
