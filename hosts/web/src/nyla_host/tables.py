"""The host's tables on the kernel's metadata: API tokens (hashed), agent runs as the host
sees them (status survives a crash) and their streamed events (replayed after the run)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, Text, func
from sqlalchemy.orm import Mapped, mapped_column

from nyla.host import Base, StoredRun, StoredRunEvent


class ApiTokenRow(Base):
    """An API token: only the SHA-256 of its secret is stored (the secret is shown once)."""

    __tablename__ = "host_api_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(Text, default="")
    secret_hash: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    role: Mapped[str] = mapped_column(String(32), default="user")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: where the token is good (the MCP endpoint's URL for an OAuth access token); NULL: the API
    audience: Mapped[str | None] = mapped_column(Text, nullable=True)


#: the runs and their events moved into the kernel (durable runs, ``kernel.runs``): same
#: tables, kept under the names the host's code and tests use
HostRunRow = StoredRun
HostRunEventRow = StoredRunEvent

# the OAuth authorization server's tables join the same metadata
import nyla_host.oauth.tables  # noqa: E402, F401
