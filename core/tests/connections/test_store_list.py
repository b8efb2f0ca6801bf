"""Listing a user's connections (read on the driver for every agent run whose tools search
data sources): every field as the store keeps it, oldest first, only the user's, and of one
service when asked."""

from __future__ import annotations

import pytest

from nyla.connections.store import ConnectionStore

pytestmark = pytest.mark.db


async def _no_purge(*_args: object) -> None:
    raise AssertionError("nothing is removed here")


async def test_a_users_connections_are_listed_whole_oldest_first(db) -> None:
    store = ConnectionStore(db, cipher=None, purge_index=_no_purge)  # type: ignore[arg-type]
    mail = await store.add(
        service="msft",
        user_id="ada",
        account="ada@example.org",
        scopes=["Mail.Read"],
        settings={"folder": "inbox"},
        mandate_id="m1",
    )
    drive = await store.add(
        service="gdrive", user_id="ada", label="Drive", knowledge_ingestion_enabled=False
    )
    await store.add(service="msft", user_id="bob")

    listed = await store.list("ada")
    assert listed == [await store.get(mail.id, user_id="ada"), drive]
    assert listed[0].scopes == ["Mail.Read"] and listed[0].settings == {"folder": "inbox"}
    assert listed[0].mandate_id == "m1" and listed[1].knowledge_ingestion_enabled is False
    assert await store.list("ada", service="gdrive") == [drive]
    assert await store.list("carla") == []
