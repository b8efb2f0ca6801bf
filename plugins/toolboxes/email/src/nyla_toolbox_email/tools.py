"""The five e-mail tools: ``searchEmail``, ``readEmail``, ``draftEmail``, ``sendEmail``,
``organizeEmail``. Each works on any connected mail service (an adapter with the mail
capabilities of :class:`nyla.sdk.connectors.MailConnector`), reached through the run's
connections (``ctx.services.connections``)."""

from __future__ import annotations

import functools
from datetime import datetime

from pydantic import Field, model_validator

from nyla.sdk import (
    ConnectionArgs,
    ConnectionSession,
    Tool,
    ToolContext,
    ToolResult,
    connection_field,
    save_download,
    with_connection,
)
from nyla.sdk.connectors import (
    ConnectorError,
    Download,
    Item,
    MailQuery,
    OutgoingMessage,
    connector_failure,
    inline_line,
    inline_listing,
)
from nyla_toolbox_email.policy import outside_domains

#: the largest attachment saved into the user's files, and the most attachments per mail
MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
MAX_BODY_CHARS = 20_000


class _Args(ConnectionArgs):
    connection_id: str | None = connection_field("mail")


class SearchEmailArgs(_Args):
    """Arguments of ``searchEmail``."""

    query: str = Field(default="", description="Words to find in subject, body and sender.")
    sender: str = Field(default="", alias="from", description="Sender address or name.")
    subject: str = Field(default="", description="Words of the subject.")
    folder: str = Field(
        default="",
        description="Folder id or well-known name (inbox, sentitems, drafts, archive); "
        "empty: the whole mailbox.",
    )
    date_from: datetime | None = Field(
        default=None, alias="dateFrom", description="Received on or after (ISO 8601)."
    )
    date_to: datetime | None = Field(
        default=None, alias="dateTo", description="Received before (ISO 8601)."
    )
    unread_only: bool = Field(default=False, alias="unreadOnly")
    cursor: str | None = Field(default=None, description="From a previous result: next page.")


class ReadEmailArgs(_Args):
    """Arguments of ``readEmail``."""

    message_id: str = Field(alias="messageId", description="Id from searchEmail.")
    save_attachments: bool = Field(
        default=False,
        alias="saveAttachments",
        description="Save the attachments into the user's files (readFile can open them).",
    )


class DraftEmailArgs(_Args):
    """Arguments of ``draftEmail``."""

    to: list[str] = Field(min_length=1, description="Recipient addresses.")
    subject: str = Field(min_length=1)
    body: str = Field(description="Plain-text body.")
    cc: list[str] = Field(default_factory=list)
    attachment_file_ids: list[str] = Field(
        default_factory=list, alias="attachmentFileIds", description="Ids of the user's files."
    )


class SendEmailArgs(DraftEmailArgs):
    """Arguments of ``sendEmail``: a saved draft, or a new message."""

    draft_id: str | None = Field(default=None, alias="draftId", description="Draft to send.")
    to: list[str] = Field(default_factory=list, description="Recipients of a new message.")
    subject: str = ""
    body: str = ""

    @model_validator(mode="after")
    def _draft_or_message(self) -> SendEmailArgs:
        if not self.draft_id and not (self.to and self.subject):
            raise ValueError("pass draftId, or to and subject (and body) of a new message")
        return self


class OrganizeEmailArgs(_Args):
    """Arguments of ``organizeEmail``."""

    message_id: str = Field(alias="messageId")
    move_to: str | None = Field(
        default=None, alias="moveTo", description="Folder id or well-known name (archive, ...)."
    )
    flagged: bool | None = Field(default=None, description="Set or clear the follow-up flag.")
    read: bool | None = Field(default=None, description="Mark read (true) or unread (false).")

    @model_validator(mode="after")
    def _something(self) -> OrganizeEmailArgs:
        if self.move_to is None and self.flagged is None and self.read is None:
            raise ValueError("pass moveTo, flagged or read")
        return self


#: ``@on_mail(need=...)``: the handler runs on the user's mail connection (of any service) that
#: can ``need``
on_mail = functools.partial(with_connection, None, label="mail")


@on_mail(need="search_mail")
async def search_email(args: SearchEmailArgs, ctx: ToolContext, s: ConnectionSession) -> ToolResult:
    """Messages by words, sender, subject, folder and received date; one line each."""
    query = MailQuery(
        text=args.query,
        sender=args.sender,
        subject=args.subject,
        folder=args.folder,
        since=args.date_from,
        until=args.date_to,
        unread_only=args.unread_only,
    )
    page = await s.adapter.search_mail(s, query, args.cursor)
    data = {
        "connectionId": s.connection.id,
        "items": [i.to_wire() for i in page.items],
        "cursor": page.cursor,
    }
    return ToolResult.ok(inline_listing(page.items, page.cursor), data=data)


@on_mail(need="read_message")
async def read_email(args: ReadEmailArgs, ctx: ToolContext, s: ConnectionSession) -> ToolResult:
    """A message's text and its attachments (saved into the user's files on request)."""
    msg = await s.adapter.read_message(s, args.message_id)
    lines = [inline_line(msg.item), f"to: {', '.join(msg.to) or '-'}"]
    if msg.cc:
        lines.append(f"cc: {', '.join(msg.cc)}")
    body = msg.body if len(msg.body) <= MAX_BODY_CHARS else msg.body[:MAX_BODY_CHARS] + " [...]"
    lines += ["", body, ""]
    saved: dict[str, str] = {}
    for att in msg.attachments:
        note = ""
        if args.save_attachments:
            try:
                got = await s.adapter.download(s, att.id, MAX_ATTACHMENT_BYTES)
                saved[att.id] = (await save_download(ctx, s, got)).id
                note = f" -> saved as file {saved[att.id]}"
            except ConnectorError as exc:  # the message is read all the same
                note = f" (not saved: {connector_failure(exc).error})"
        lines.append(f"attachment: {inline_line(att)}{note}")
    data = {"message": msg.to_wire(), "savedFiles": saved}
    return ToolResult.ok("\n".join(lines).strip(), data=data)


async def _outgoing(args: DraftEmailArgs, ctx: ToolContext) -> OutgoingMessage | ToolResult:
    """The message to draft or send, with the user's files attached; a file the user does
    not have is a failure naming it."""
    attachments = []
    for file_id in args.attachment_file_ids:
        meta = await ctx.services.files.get(file_id, ctx.run)
        if meta is None:
            return ToolResult.fail(
                f"no file {file_id} for this user",
                "NOT_FOUND",
                field="attachmentFileIds",
                suggestion="use ids from listFiles",
            )
        content = await ctx.services.files.read_bytes(file_id, ctx.run)
        item = Item(id=file_id, title=meta.name, size=len(content), mime=meta.mime_type)
        attachments.append(Download(item=item, content=content, mime=meta.mime_type))
    return OutgoingMessage(
        to=args.to, cc=args.cc, subject=args.subject, body=args.body, attachments=attachments
    )


@on_mail(need="draft")
async def draft_email(args: DraftEmailArgs, ctx: ToolContext, s: ConnectionSession) -> ToolResult:
    """Save a draft (nothing is sent)."""
    message = await _outgoing(args, ctx)
    if isinstance(message, ToolResult):
        return message
    draft = await s.adapter.draft(s, message)
    return ToolResult.ok(
        f"draft saved: {inline_line(draft)}; send it with sendEmail(draftId={draft.id!r})",
        data={"draftId": draft.id, "connectionId": s.connection.id},
    )


@on_mail(need=lambda args: "send_draft" if args.draft_id else "draft")
async def send_email(args: SendEmailArgs, ctx: ToolContext, s: ConnectionSession) -> ToolResult:
    """Send a saved draft or a new message (a write: the policy hook sees it first)."""
    if not args.draft_id:
        message = await _outgoing(args, ctx)
        if isinstance(message, ToolResult):
            return message
        sent = await s.adapter.send(s, message)
        return ToolResult.ok(f"sent (id {sent})", data={"messageId": sent})
    # the policy hook saw only the draft's id: its recipients are checked here
    draft = await s.adapter.read_message(s, args.draft_id)
    if outside := outside_domains([*draft.to, *draft.cc]):
        return ToolResult.fail(
            f"sending to {', '.join(outside)} is not allowed (NYLA_EMAIL_SEND_DOMAINS)",
            "DENIED",
            suggestion="tell the user to send the draft themselves",
        )
    sent = await s.adapter.send_draft(s, args.draft_id)
    return ToolResult.ok(f"sent (id {sent})", data={"messageId": sent})


@on_mail(need=lambda args: "move" if args.move_to else "flag")
async def organize_email(
    args: OrganizeEmailArgs, ctx: ToolContext, s: ConnectionSession
) -> ToolResult:
    """Flag, mark read/unread and/or move a message."""
    message_id, done = args.message_id, []
    if args.flagged is not None or args.read is not None:
        item = await s.adapter.flag(s, message_id, flagged=args.flagged, read=args.read)
        message_id = item.id
        done.append("flagged" if args.flagged else "updated")
    if args.move_to:
        item = await s.adapter.move(s, message_id, args.move_to)
        message_id = item.id
        done.append(f"moved to {args.move_to}")
    return ToolResult.ok(
        f"{', '.join(done)}; the message id is now {message_id}",
        data={"messageId": message_id},
    )


def email_tools() -> list[Tool]:
    """The five tools."""
    return [
        Tool.from_model(
            "searchEmail",
            "Search the user's mailbox (Outlook, Gmail) on the server: words, sender (from), "
            "subject, folder, received dates. One line per message with date and sender; "
            "use readEmail for a message's text. Search before browsing.",
            SearchEmailArgs,
            search_email,
            read_only=True,
            timeout_s=60,
        ),
        Tool.from_model(
            "readEmail",
            "Read one message: text, recipients, attachments (saveAttachments stores them in "
            "the user's files).",
            ReadEmailArgs,
            read_email,
            read_only=True,
            timeout_s=120,
        ),
        Tool.from_model(
            "draftEmail",
            "Save a draft in the user's mailbox. Nothing is sent.",
            DraftEmailArgs,
            draft_email,
            timeout_s=60,
        ),
        Tool.from_model(
            "sendEmail",
            "Send a saved draft (draftId) or a new message. Only when the user asked to send.",
            SendEmailArgs,
            send_email,
            timeout_s=60,
        ),
        Tool.from_model(
            "organizeEmail",
            "Flag or unflag, mark read or unread, and/or move a message to a folder.",
            OrganizeEmailArgs,
            organize_email,
            timeout_s=60,
        ),
    ]
