"""Mail services beyond the connector protocol: a structured search (sender, subject, folder,
date range), one message with its attachments, drafts, sending a draft, moving and flagging.

A mail connector (Outlook now, Gmail when its connector exists) subclasses
:class:`MailConnector` and overrides what its service can; :func:`mail_capabilities` derives
the set from the overrides, as :func:`~nyla.connections.base.capabilities` does for the base
protocol. The email toolbox reaches every connected mail service through these methods and
the kernel's connector registry, never by importing a connector package.

Attachments are ordinary downloadable items: their ids go to ``download``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from nyla.connections.base import BaseConnector
from nyla.connections.errors import NotSupportedError
from nyla.models.base import WireModel
from nyla.models.datasource import ConnectorContext, Item, ItemPage, OutgoingMessage

#: mail capability names, derived from the overridden methods of a :class:`MailConnector`
MAIL_CAPABILITIES = ("search_mail", "read_message", "draft", "send_draft", "move", "flag")


class MailQuery(WireModel):
    """A structured mail search: free ``text`` plus the fields every mail service filters by.
    Empty fields do not filter; ``since``/``until`` bound the received time."""

    text: str = ""
    sender: str = ""
    subject: str = ""
    folder: str = ""
    since: datetime | None = None
    until: datetime | None = None
    unread_only: bool = False


class MailMessage(WireModel):
    """One message in full: its metadata block, the body, the recipients and the
    attachments (items whose ids ``download`` takes)."""

    item: Item
    body: str = ""
    body_type: str = "text"
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    attachments: list[Item] = Field(default_factory=list)


class MailConnector(BaseConnector):
    """Base of a mail service's adapter: override the mail capabilities it has."""

    async def search_mail(
        self, ctx: ConnectorContext, query: MailQuery, cursor: str | None = None
    ) -> ItemPage:
        """Messages matching ``query``, newest first, one page."""
        raise NotSupportedError(f"{self.service} has no mail search")

    async def read_message(self, ctx: ConnectorContext, message_id: str) -> MailMessage:
        """One message with its body and attachment list."""
        raise NotSupportedError(f"{self.service} cannot read messages")

    async def draft(self, ctx: ConnectorContext, message: OutgoingMessage) -> Item:
        """Save ``message`` as a draft (nothing is sent); returns the draft."""
        raise NotSupportedError(f"{self.service} cannot save drafts")

    async def send_draft(self, ctx: ConnectorContext, draft_id: str) -> str:
        """Send a saved draft; returns the vendor's id of the sent message."""
        raise NotSupportedError(f"{self.service} cannot send drafts")

    async def move(self, ctx: ConnectorContext, message_id: str, folder: str) -> Item:
        """Move a message to ``folder`` (a folder id or well-known name); returns it."""
        raise NotSupportedError(f"{self.service} cannot move messages")

    async def flag(
        self,
        ctx: ConnectorContext,
        message_id: str,
        *,
        flagged: bool | None = None,
        read: bool | None = None,
    ) -> Item:
        """Set the follow-up flag and/or the read state (``None`` leaves it); returns it."""
        raise NotSupportedError(f"{self.service} cannot flag messages")


def mail_capabilities(adapter: Any) -> frozenset[str]:
    """The mail capabilities an adapter overrides (empty for a non-mail service)."""
    if not isinstance(adapter, MailConnector):
        return frozenset()
    return frozenset(
        name
        for name in MAIL_CAPABILITIES
        if getattr(type(adapter), name) is not getattr(MailConnector, name)
    )
