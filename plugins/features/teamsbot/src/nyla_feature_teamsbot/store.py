"""Where the Teams bot keeps its bindings, conversations, transcript and directives (the
kernel's PostgreSQL, in the database's own schema)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import Field
from sqlalchemy import delete, func, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from nyla.sdk import WireModel
from nyla_feature_teamsbot.activity import Activity
from nyla_feature_teamsbot.tables import METADATA, bindings, conversations, directives, messages

#: the transcript lines an answer's context carries at most
RECENT_LINES = 12


class Binding(WireModel):
    """A tenant served for a mandate; the bot runs as ``user_id``. ``id`` is the feature
    instance id."""

    id: str
    tenant_id: str
    mandate_id: str
    user_id: str
    created_by: str
    created_at: datetime


class Conversation(WireModel):
    """A chat, channel thread or meeting chat the bot has been in."""

    id: str
    binding_id: str
    kind: str
    title: str | None = None
    service_url: str
    meeting_id: str | None = None
    last_activity_at: datetime
    bot: dict[str, Any] = Field(default_factory=dict)


class Line(WireModel):
    """One message of a conversation's transcript."""

    direction: str
    source: str
    sender_name: str | None = None
    text: str
    sent_at: datetime


class Directive(WireModel):
    """A persistent operator directive: for one conversation, or (``conversation_id`` None)
    every conversation of the binding."""

    id: str
    binding_id: str
    conversation_id: str | None = None
    text: str
    created_by: str
    created_at: datetime


class TeamsStore:
    """The bot's rows, over a :class:`nyla.host.Database` (``db``)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self._ready = False

    async def ensure_tables(self) -> None:
        """Create the bot's tables in the database's schema if missing (once)."""
        if self._ready:
            return
        await self.db.ensure_ready()
        schema = getattr(self.db, "schema", None)
        async with self.db.engine.begin() as conn:
            if schema:  # in the database's own schema, never a shadow in public
                conn = await conn.execution_options(schema_translate_map={None: schema})
            await conn.run_sync(METADATA.create_all)
        self._ready = True

    # bindings ------------------------------------------------------------------------------

    async def add_binding(self, tenant_id: str, mandate_id: str, user_id: str, by: str) -> Binding:
        """Serve ``tenant_id`` for ``mandate_id`` as ``user_id``; a tenant bound already is a
        ``ValueError`` (remove its binding first)."""
        await self.ensure_tables()
        row = {
            "feature_instance_id": "teams-" + uuid.uuid4().hex[:16],
            "tenant_id": tenant_id.strip().lower(),
            "mandate_id": mandate_id,
            "user_id": user_id,
            "created_by": by,
            "created_at": datetime.now(UTC),
        }
        async with self.db.session() as s:
            inserted = await s.execute(
                pg_insert(bindings)
                .values(**row)
                .on_conflict_do_nothing()
                .returning(bindings.c.feature_instance_id)
            )
            if inserted.scalar() is None:
                raise ValueError(f"tenant {tenant_id} is bound already")
        return _binding(row)

    async def bindings(self, mandate_id: str | None = None) -> list[Binding]:
        """Every binding (of one mandate when given)."""
        await self.ensure_tables()
        query = select(bindings).order_by(bindings.c.created_at)
        if mandate_id is not None:
            query = query.where(bindings.c.mandate_id == mandate_id)
        async with self.db.session() as s:
            return [_binding(r._mapping) for r in await s.execute(query)]

    async def binding(self, binding_id: str) -> Binding | None:
        """The binding with this id."""
        await self.ensure_tables()
        async with self.db.session() as s:
            row = (
                await s.execute(
                    select(bindings).where(bindings.c.feature_instance_id == binding_id)
                )
            ).first()
        return _binding(row._mapping) if row else None

    async def binding_for_tenant(self, tenant_id: str | None) -> Binding | None:
        """The binding serving ``tenant_id`` (``None``: the tenant is not served)."""
        if not tenant_id:
            return None
        await self.ensure_tables()
        async with self.db.session() as s:
            row = (
                await s.execute(
                    select(bindings).where(bindings.c.tenant_id == tenant_id.strip().lower())
                )
            ).first()
        return _binding(row._mapping) if row else None

    async def remove_binding(self, binding_id: str) -> bool:
        """Stop serving a tenant; its directives go with it (the transcript stays)."""
        await self.ensure_tables()
        async with self.db.session() as s:
            await s.execute(
                delete(directives).where(directives.c.feature_instance_id == binding_id)
            )
            gone = await s.execute(
                delete(bindings).where(bindings.c.feature_instance_id == binding_id)
            )
        return bool(gone.rowcount)

    # conversations and transcript ----------------------------------------------------------

    async def record_conversation(self, binding: Binding, activity: Activity) -> None:
        """Keep the conversation an activity belongs to (the bot was added to it)."""
        async with self.db.session() as s:
            await s.execute(_conversation_upsert(binding, activity))

    async def record_incoming(self, binding: Binding, activity: Activity, text: str) -> bool:
        """Keep the conversation and the message; ``False`` when this activity was recorded
        before (the channel delivered it again)."""
        now = datetime.now(UTC)
        conv = activity.conversation
        upsert = _conversation_upsert(binding, activity)
        async with self.db.session() as s:
            await s.execute(upsert)
            added = await s.execute(
                pg_insert(messages)
                .values(
                    id=uuid.uuid4().hex,
                    feature_instance_id=binding.id,
                    conversation_id=conv.id,
                    activity_id=activity.id,
                    direction="in",
                    source="user",
                    sender_name=activity.from_.name,
                    sender_aad_id=activity.from_.aad_object_id,
                    text=text,
                    sent_at=now,
                )
                .on_conflict_do_nothing()
                .returning(messages.c.id)
            )
            return added.scalar() is not None

    async def record_outgoing(
        self, conversation: Conversation, text: str, source: str, activity_id: str | None
    ) -> None:
        """Keep a message the bot sent."""
        async with self.db.session() as s:
            await s.execute(
                pg_insert(messages)
                .values(
                    id=uuid.uuid4().hex,
                    feature_instance_id=conversation.binding_id,
                    conversation_id=conversation.id,
                    activity_id=activity_id,
                    direction="out",
                    source=source,
                    sender_name="nyla",
                    text=text,
                    sent_at=datetime.now(UTC),
                )
                .on_conflict_do_nothing()
            )

    async def conversation(self, conversation_id: str) -> Conversation | None:
        """One conversation."""
        await self.ensure_tables()
        async with self.db.session() as s:
            row = (
                await s.execute(select(conversations).where(conversations.c.id == conversation_id))
            ).first()
        return _conversation(row._mapping) if row else None

    async def conversations(self, binding_ids: list[str]) -> list[Conversation]:
        """The conversations of these bindings, most recently active first."""
        await self.ensure_tables()
        query = (
            select(conversations)
            .where(conversations.c.feature_instance_id.in_(binding_ids))
            .order_by(conversations.c.last_activity_at.desc())
        )
        async with self.db.session() as s:
            return [_conversation(r._mapping) for r in await s.execute(query)]

    async def recent(self, conversation_id: str, limit: int = RECENT_LINES) -> list[Line]:
        """The conversation's last ``limit`` messages, oldest first."""
        await self.ensure_tables()
        query = (
            select(messages)
            .where(messages.c.conversation_id == conversation_id)
            .order_by(messages.c.sent_at.desc(), messages.c.id)
            .limit(limit)
        )
        async with self.db.session() as s:
            rows = [r._mapping for r in await s.execute(query)]
        return [Line.model_validate(dict(r)) for r in reversed(rows)]

    # directives ----------------------------------------------------------------------------

    async def add_directive(
        self, binding_id: str, text: str, by: str, conversation_id: str | None = None
    ) -> Directive:
        """Keep a persistent directive."""
        await self.ensure_tables()
        row = {
            "id": uuid.uuid4().hex[:16],
            "feature_instance_id": binding_id,
            "conversation_id": conversation_id,
            "text": text,
            "created_by": by,
            "created_at": datetime.now(UTC),
        }
        async with self.db.session() as s:
            await s.execute(directives.insert().values(**row))
        return _directive(row)

    async def directives(
        self, binding_ids: list[str], conversation_id: str | None = None
    ) -> list[Directive]:
        """The directives of these bindings; with ``conversation_id``, those that apply to
        it (its own and the binding-wide ones), oldest first."""
        await self.ensure_tables()
        query = select(directives).where(directives.c.feature_instance_id.in_(binding_ids))
        if conversation_id is not None:
            query = query.where(
                or_(
                    directives.c.conversation_id.is_(None),
                    directives.c.conversation_id == conversation_id,
                )
            )
        async with self.db.session() as s:
            rows = await s.execute(query.order_by(directives.c.created_at, directives.c.id))
            return [_directive(r._mapping) for r in rows]

    async def directive(self, directive_id: str) -> Directive | None:
        """One directive."""
        await self.ensure_tables()
        async with self.db.session() as s:
            row = (
                await s.execute(select(directives).where(directives.c.id == directive_id))
            ).first()
        return _directive(row._mapping) if row else None

    async def remove_directive(self, directive_id: str) -> bool:
        """Drop a directive; ``False`` when there was none."""
        await self.ensure_tables()
        async with self.db.session() as s:
            gone = await s.execute(delete(directives).where(directives.c.id == directive_id))
        return bool(gone.rowcount)

    async def counts(self) -> dict[str, int]:
        """How many bindings, conversations, messages and directives there are."""
        await self.ensure_tables()
        out = {}
        async with self.db.session() as s:
            for name, table in (
                ("bindings", bindings),
                ("conversations", conversations),
                ("messages", messages),
                ("directives", directives),
            ):
                out[name] = int(await s.scalar(select(func.count()).select_from(table)) or 0)
        return out


def _conversation_upsert(binding: Binding, activity: Activity) -> Any:
    """Insert the conversation, or refresh where and as whom the bot answers in it."""
    now = datetime.now(UTC)
    conv = activity.conversation
    values = {
        "id": conv.id,
        "feature_instance_id": binding.id,
        "kind": activity.kind,
        "title": (conv.name or None),
        "service_url": activity.service_url,
        "bot": activity.recipient.model_dump(by_alias=True, exclude_none=True),
        "meeting_id": activity.meeting_id,
        "created_at": now,
        "last_activity_at": now,
    }
    upsert = pg_insert(conversations).values(**values)
    return upsert.on_conflict_do_update(
        index_elements=[conversations.c.id],
        set_={k: upsert.excluded[k] for k in ("service_url", "bot", "last_activity_at")},
    )


def _binding(row: Any) -> Binding:
    return Binding(
        id=row["feature_instance_id"],
        tenant_id=row["tenant_id"],
        mandate_id=row["mandate_id"],
        user_id=row["user_id"],
        created_by=row["created_by"],
        created_at=row["created_at"],
    )


def _conversation(row: Any) -> Conversation:
    return Conversation(
        id=row["id"],
        binding_id=row["feature_instance_id"],
        kind=row["kind"],
        title=row["title"],
        service_url=row["service_url"],
        meeting_id=row["meeting_id"],
        last_activity_at=row["last_activity_at"],
        bot=dict(row["bot"] or {}),
    )


def _directive(row: Any) -> Directive:
    return Directive(
        id=row["id"],
        binding_id=row["feature_instance_id"],
        conversation_id=row["conversation_id"],
        text=row["text"],
        created_by=row["created_by"],
        created_at=row["created_at"],
    )
