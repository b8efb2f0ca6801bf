"""The MCP client's tables in the kernel's PostgreSQL (SQLAlchemy Core, on the plugin's own
:data:`METADATA`, created in the database's schema): the servers each user or mandate
configured, the users' OAuth sign-ins, and the sign-ins under way. Every secret in them is
sealed with the keys that seal connection tokens (``TokenCipher``)."""

from __future__ import annotations

from sqlalchemy import Column, DateTime, MetaData, String, Table, Text, func
from sqlalchemy.dialects.postgresql import JSONB

METADATA = MetaData()

#: one configured server of a user (``owner_scope`` ``user``) or of a mandate (``mandate``):
#: its configuration as ``McpServer`` JSON with the header and env values and a client
#: secret sealed
servers = Table(
    "mcp_servers",
    METADATA,
    Column("owner_scope", String(16), primary_key=True),
    Column("owner_id", String(256), primary_key=True),
    Column("name", String(32), primary_key=True),
    Column("config", JSONB, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

#: one user's sign-in to one server (by name): the ``Grant`` JSON, sealed as a whole
grants = Table(
    "mcp_grants",
    METADATA,
    Column("user_id", String(256), primary_key=True),
    Column("server", String(32), primary_key=True),
    Column("sealed", Text, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

#: a sign-in under way, by a hash of its ``state``: the ``Pending`` JSON, sealed
pending = Table(
    "mcp_pending_sign_ins",
    METADATA,
    Column("state_hash", String(64), primary_key=True),
    Column("sealed", Text, nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False, index=True),
)

#: the files of an earlier nyla this database imported (by absolute path): each once
imported_files = Table(
    "mcp_imported_files",
    METADATA,
    Column("path", Text, primary_key=True),
    Column("imported_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)
