"""The credential table (a connection's OAuth tokens, encrypted at rest) and the sign-ins
under way."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Integer, String, Text, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base


class ConnectionCredential(Base):
    """Tokens of one connection (Fernet ciphertext). ``version`` grows with every refresh;
    rows are only changed under the credential's advisory lock."""

    __tablename__ = "connection_credential"

    connection_id: Mapped[str] = mapped_column(
        String(128), ForeignKey("user_connection.id", ondelete="CASCADE"), primary_key=True
    )
    access_token: Mapped[str] = mapped_column(Text)
    refresh_token: Mapped[str | None] = mapped_column(Text, nullable=True)
    token_type: Mapped[str] = mapped_column(String(32), default="Bearer")
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )


class OAuthPending(Base):
    """A browser sign-in under way (authorization code with PKCE): who started it, for
    which service, label and settings, and its PKCE verifier (encrypted). Kept in the
    database so any host process can finish it; ``state`` is taken once."""

    __tablename__ = "oauth_pending"

    state: Mapped[str] = mapped_column(String(128), primary_key=True)
    service: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str] = mapped_column(String(256))
    mandate_id: Mapped[str | None] = mapped_column(String(256), nullable=True)
    label: Mapped[str] = mapped_column(String(200), default="")
    settings: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    verifier: Mapped[str] = mapped_column(Text)
    redirect_uri: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
