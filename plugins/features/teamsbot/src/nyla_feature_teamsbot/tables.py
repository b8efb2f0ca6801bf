"""The Teams bot's tables (SQLAlchemy Core, on the feature's own :data:`METADATA`).

A *binding* is one feature instance: a Microsoft Entra tenant served for one nyla mandate,
the bot running as one nyla user. The transcript (``teamsbot_messages``) is the feature's
data table, keyed by that instance, so the feature data agent can read what was said.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    DateTime,
    Index,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

METADATA = MetaData()

bindings = Table(
    "teamsbot_bindings",
    METADATA,
    Column("feature_instance_id", String(64), primary_key=True),
    Column("tenant_id", String(64), nullable=False, unique=True),
    Column("mandate_id", String(128), nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("created_by", String(128), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

conversations = Table(
    "teamsbot_conversations",
    METADATA,
    Column("id", String(512), primary_key=True),
    Column("feature_instance_id", String(64), nullable=False, index=True),
    Column("kind", String(16), nullable=False),
    Column("title", String(256)),
    Column("service_url", String(512), nullable=False),
    Column("bot", JSONB, nullable=False),
    Column("meeting_id", String(512)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_activity_at", DateTime(timezone=True), nullable=False),
)

messages = Table(
    "teamsbot_messages",
    METADATA,
    Column("id", String(64), primary_key=True),
    Column("feature_instance_id", String(64), nullable=False),
    Column("conversation_id", String(512), nullable=False),
    Column("activity_id", String(256)),
    Column("direction", String(8), nullable=False),
    Column("source", String(16), nullable=False),
    Column("sender_name", String(256)),
    Column("sender_aad_id", String(64)),
    Column("text", Text, nullable=False),
    Column("sent_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("conversation_id", "direction", "activity_id", name="teamsbot_messages_once"),
    Index("teamsbot_messages_by_conversation", "conversation_id", "sent_at"),
)

directives = Table(
    "teamsbot_directives",
    METADATA,
    Column("id", String(64), primary_key=True),
    Column("feature_instance_id", String(64), nullable=False, index=True),
    Column("conversation_id", String(512)),
    Column("text", Text, nullable=False),
    Column("created_by", String(128), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

#: the tables the feature data agent may read, by the name it sees
DATA_TABLES = {"teamsbot_messages": messages}
