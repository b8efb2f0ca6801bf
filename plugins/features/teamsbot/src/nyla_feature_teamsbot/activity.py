"""The Bot Framework activity as Teams sends it, and the message activity the bot answers with.

Only the fields the bot reads are modelled; everything else a channel sends is kept (extra
fields allowed) and ignored. Shapes follow Microsoft's Bot Framework activity schema and the
Teams conversation types: ``personal`` (a one-to-one chat with the bot), ``groupChat`` (a
group chat; a meeting's chat is a group chat whose ``channelData.meeting.id`` is set) and
``channel`` (a team's channel; the conversation id names the thread).
"""

from __future__ import annotations

import hashlib
import html
import re
from typing import Any

from pydantic import ConfigDict, Field

from nyla.sdk import WireModel

#: the conversation kinds the bot tells apart (a meeting chat is a group chat with a meeting)
PERSONAL, GROUP_CHAT, CHANNEL, MEETING = "personal", "groupChat", "channel", "meeting"
#: the longest workflow id the kernel stores (``chat_workflows.id``)
WORKFLOW_ID_CHARS = 128
_MENTION = re.compile(r"<at\b[^>]*>.*?</at>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


class _Loose(WireModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ChannelAccount(_Loose):
    """A participant: ``id`` is the channel's id (``29:…`` for a person, ``28:…`` for a bot),
    ``aad_object_id`` the person's Microsoft Entra object id."""

    id: str = ""
    name: str | None = None
    aad_object_id: str | None = None


class ConversationAccount(_Loose):
    """The conversation an activity belongs to."""

    id: str
    conversation_type: str | None = None
    tenant_id: str | None = None
    is_group: bool | None = None
    name: str | None = None


class Activity(_Loose):
    """One incoming activity (``type`` ``message``, ``conversationUpdate``, ...)."""

    type: str
    id: str | None = None
    timestamp: str | None = None
    service_url: str
    channel_id: str
    from_: ChannelAccount = Field(default_factory=ChannelAccount, alias="from")
    conversation: ConversationAccount
    recipient: ChannelAccount = Field(default_factory=ChannelAccount)
    text: str | None = None
    text_format: str | None = None
    reply_to_id: str | None = None
    entities: list[dict[str, Any]] = Field(default_factory=list)
    channel_data: dict[str, Any] = Field(default_factory=dict)
    locale: str | None = None

    @property
    def tenant_id(self) -> str | None:
        """The Microsoft Entra tenant the conversation belongs to."""
        tenant = self.channel_data.get("tenant")
        from_data = tenant.get("id") if isinstance(tenant, dict) else None
        return self.conversation.tenant_id or from_data

    @property
    def meeting_id(self) -> str | None:
        """The meeting whose chat this is (``None`` outside a meeting)."""
        meeting = self.channel_data.get("meeting")
        return meeting.get("id") if isinstance(meeting, dict) else None

    @property
    def kind(self) -> str:
        """``personal``, ``groupChat``, ``channel`` or ``meeting``."""
        if self.meeting_id:
            return MEETING
        kind = self.conversation.conversation_type
        if kind in (PERSONAL, GROUP_CHAT, CHANNEL):
            return kind
        return GROUP_CHAT if self.conversation.is_group else PERSONAL

    def plain_text(self) -> str:
        """The message's words: ``<at>`` mentions (of the bot, in group chats and channels)
        removed, other markup dropped, entities decoded, whitespace folded."""
        text = _MENTION.sub(" ", self.text or "")
        text = html.unescape(_TAG.sub(" ", text))
        return " ".join(text.split())


def workflow_id(conversation_id: str) -> str:
    """``teamsbot:{conversationId}``: round memory and knowledge per chat or meeting. A
    conversation id too long for the kernel's workflow ids (a personal chat's can be) is
    replaced by its SHA-256, so the id stays stable and distinct."""
    plain = f"teamsbot:{conversation_id}"
    if len(plain) <= WORKFLOW_ID_CHARS:
        return plain
    return "teamsbot:sha256:" + hashlib.sha256(conversation_id.encode()).hexdigest()


def message_activity(
    text: str,
    conversation: dict[str, Any],
    *,
    bot: dict[str, Any] | None = None,
    to: dict[str, Any] | None = None,
    reply_to_id: str | None = None,
) -> dict[str, Any]:
    """The message activity the bot sends: its text as Markdown, in ``conversation``."""
    body: dict[str, Any] = {
        "type": "message",
        "text": text,
        "textFormat": "markdown",
        "conversation": conversation,
    }
    if bot:
        body["from"] = bot
    if to:
        body["recipient"] = to
    if reply_to_id:
        body["replyToId"] = reply_to_id
    return body
