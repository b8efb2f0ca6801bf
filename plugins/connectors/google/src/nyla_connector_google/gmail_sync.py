"""Gmail sync of one label: a full sweep (``messages.list`` + parallel ``messages.get``,
with the mailbox's ``historyId`` read *before* the sweep so nothing that changes during it
is lost), then ``history.list`` from the stored ``historyId``. Gmail answers 404 for a
history id it no longer keeps (typically after a week): that is a full re-sync."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from nyla.sdk.connectors import (
    Checkpoint,
    ConnectorContext,
    CursorExpiredError,
    ItemFailure,
    SyncPage,
    VendorNotFoundError,
    token_pages,
)
from nyla_connector_google import items
from nyla_connector_google.gmail import HISTORY_TYPES, PAGE, call, list_ids, resolve
from nyla_connector_google.paths import Target

FULL = {"format": "full"}


class MailCheckpoint(Checkpoint):
    """Where a label's sync resumes: the mailbox ``historyId`` the history starts from, and
    while a full sweep is under way (``full``) the ``messages.list`` page it is at."""

    historyId: str | None = None  # the key nyla has always stored
    page: str | None = None
    full: bool = False


async def sync_mail(
    ctx: ConnectorContext, target: Target, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """Pages of messages (with their text) in the label; see the module docs."""
    cp = MailCheckpoint.load(checkpoint, scope=target.path)
    if cp.historyId and not cp.full:
        async for page in _history(ctx, target, cp.historyId):
            yield page
        return
    start = cp.historyId or str((await call(ctx, "getProfile", "/profile"))["historyId"])
    token = cp.page
    while True:
        ids, nxt = await list_ids(ctx, target.ident, "", token, PAGE)
        failed: dict[str, str] = {}
        raws = await resolve(ctx, ids, FULL, failed)
        found = [items.message_item(r, target.ident, with_body=True) for r in raws if r]
        state = MailCheckpoint(historyId=start, page=nxt, full=bool(nxt), scope=target.path)
        yield SyncPage(
            items=found,
            failures=_failures(failed),
            checkpoint=state.dump(),
            done=nxt is None,
            full_listing=True,
        )
        if nxt is None:
            return
        token = nxt


def _changes(records: list[dict[str, Any]], label: str, state: dict[str, bool]) -> None:
    """Fold history records (oldest first) into ``state``: message id -> present."""
    for record in records:
        for entry in record.get("messagesAdded") or []:
            msg = entry.get("message") or {}
            state[msg["id"]] = label in (msg.get("labelIds") or [label])
        for entry in record.get("labelsAdded") or []:
            if label in (entry.get("labelIds") or []):
                state[entry["message"]["id"]] = True
        for entry in record.get("labelsRemoved") or []:
            if label in (entry.get("labelIds") or []):
                state[entry["message"]["id"]] = False
        for entry in record.get("messagesDeleted") or []:
            state[entry["message"]["id"]] = False


async def _history(ctx: ConnectorContext, target: Target, start: str) -> AsyncIterator[SyncPage]:
    """``history.list`` pages from ``start``: added messages fetched in parallel, deleted
    (or unlabelled) ones as tombstones. A cancelled run resumes from ``start`` again."""
    label = target.ident

    async def fetch(params: dict[str, Any]) -> Any:
        try:
            return await call(ctx, "history.list", "/history", params=params)
        except VendorNotFoundError as exc:
            raise CursorExpiredError(
                f"google: Gmail no longer has history id {start} ({exc}); full re-sync",
                service="google",
                status_code=404,
            ) from exc

    query = {"startHistoryId": start, "historyTypes": HISTORY_TYPES, "labelId": label}
    async for body in token_pages(fetch, {k: v for k, v in query.items() if v}):
        state: dict[str, bool] = {}
        _changes(body.get("history") or [], label, state)
        present = [i for i, here in state.items() if here]
        failed: dict[str, str] = {}
        raws = await resolve(ctx, present, FULL, failed)
        found = [items.message_item(r, label, with_body=True) for r in raws if r]
        fetched = {r["id"] for r in raws if r} | set(failed)
        gone = [f"mail:{i}" for i, here in state.items() if not here or i not in fetched]
        token = body.get("nextPageToken")
        yield SyncPage(
            items=found,
            tombstones=gone,
            failures=_failures(failed),
            checkpoint=MailCheckpoint(
                historyId=start if token else str(body.get("historyId") or start),
                scope=target.path,
            ).dump(),
            done=token is None,
            full_listing=False,
            deletions_reported=True,  # history names deleted and unlabelled messages
        )


def _failures(failed: dict[str, str]) -> list[ItemFailure]:
    """Messages listed but not readable (403): reported, and kept by the walker."""
    return [ItemFailure(item_id=f"mail:{i}", reason=why) for i, why in failed.items()]


async def message_ids(ctx: ConnectorContext, target: Target) -> AsyncIterator[list[str]]:
    """Every message id in the label (a slim listing; raises on any failed page)."""
    token: str | None = None
    while True:
        ids, token = await list_ids(ctx, target.ident, "", token, 500)
        yield [f"mail:{i}" for i in ids]
        if token is None:
            return
