"""The authorization server's tables: registered clients, consent requests waiting for the
person, authorization codes and grants (one per approved client, holding the refresh token).
Codes and refresh tokens are stored as SHA-256 hashes, never as themselves."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, String, Text, func
from sqlalchemy.orm import Mapped, mapped_column

from nyla.host import Base


class OAuthClientRow(Base):
    """A client registered dynamically (RFC 7591): a public client, PKCE is its proof."""

    __tablename__ = "host_oauth_clients"

    client_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_name: Mapped[str] = mapped_column(Text, default="")
    #: the registration response as registered (RFC 7591 client information)
    info: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), index=True
    )


class OAuthRequestRow(Base):
    """An authorization request waiting for the signed-in person's approval or denial."""

    __tablename__ = "host_oauth_requests"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(64))
    #: the validated parameters (redirect URI, PKCE challenge, state, scopes, resource)
    params: Mapped[dict] = mapped_column(JSON)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class OAuthCodeRow(Base):
    """An authorization code: single use, short-lived, bound to the person who approved."""

    __tablename__ = "host_oauth_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str] = mapped_column(String(128))
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    params: Mapped[dict] = mapped_column(JSON)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: the access token (``host_api_tokens.id``) the code was exchanged for
    token_id: Mapped[str | None] = mapped_column(String(32), nullable=True)


class OAuthGrantRow(Base):
    """What a person approved for a client: its access token (a row of ``host_api_tokens``,
    the grant's key) and the current refresh token; revoking the token ends the grant."""

    __tablename__ = "host_oauth_grants"

    token_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[str] = mapped_column(String(128))
    resource: Mapped[str] = mapped_column(Text)
    scopes: Mapped[list] = mapped_column(JSON)
    refresh_hash: Mapped[str] = mapped_column(String(64), unique=True)
    #: the refresh token before the last rotation: presented again, it ends the grant
    previous_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    refresh_expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
