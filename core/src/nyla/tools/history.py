"""The cross-workflow tools (seeds: ``_crossWorkflowTools``): ``listWorkflowHistory`` lists
the caller's chat workflows (conversations), ``readWorkflowMessages`` reads one of them.

Both are offered to a top-level run only (``top_level_only``): a sub-agent never sees them,
however it asks. Every id goes through the kernel's owned-id check before a handler runs
(``workflowId``: one of the caller's workflows, or the run's own), and the listing asks the
store for the caller's workflows alone (their user, in their mandate or in none).
"""

from __future__ import annotations

from pydantic import Field, field_validator

from nyla.models.chat import ChatMessage, WorkflowSummary
from nyla.models.tools import Tool, ToolContext, ToolResult
from nyla.text import has_unstorable_chars
from nyla.tools._args import Args, ToolSpec, guarded, tools_from

#: characters of one message ``readWorkflowMessages`` shows at most
MESSAGE_CHARS = 2000


class HistoryArgs(Args):
    limit: int = Field(20, ge=1, le=100, description="How many workflows at most.")
    search: str | None = Field(
        None, max_length=200, description="Only workflows whose title or a message has this."
    )

    @field_validator("search")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        if value is not None and has_unstorable_chars(value):
            raise ValueError("search holds characters no text can contain")
        return value.strip() or None if value is not None else None


def _line(w: WorkflowSummary, current: str | None) -> str:
    when = w.updated_at.isoformat(timespec="minutes") if w.updated_at else "-"
    mark = " (this conversation)" if w.id == current else ""
    return f"- {w.id}: {w.title or '(untitled)'}{mark} — {w.message_count} message(s), {when}"


@guarded
async def list_workflow_history(args: HistoryArgs, ctx: ToolContext) -> ToolResult:
    found = await ctx.services.files.workflows.history(
        ctx.run, limit=args.limit, search=args.search
    )
    wire = [
        {
            "workflowId": w.id,
            "title": w.title,
            "featureInstanceId": w.feature_instance_id,
            "updatedAt": w.updated_at.isoformat() if w.updated_at else None,
            "messageCount": w.message_count,
            "current": w.id == ctx.run.workflow_id,
        }
        for w in found
    ]
    if not found:
        return ToolResult.ok("no workflows found", data={"workflows": []})
    text = "\n".join(_line(w, ctx.run.workflow_id) for w in found)
    return ToolResult.ok(f"{len(found)} workflow(s):\n{text}", data={"workflows": wire})


class MessagesArgs(Args):
    workflow_id: str = Field(description="Id of the workflow (from listWorkflowHistory).")
    limit: int = Field(50, ge=1, le=200, description="How many messages at most (the latest).")


def _message_wire(m: ChatMessage) -> dict[str, object]:
    return {
        "messageId": m.id,
        "role": m.role,
        "status": m.status,
        "roundNumber": m.round_number,
        "message": m.message[:MESSAGE_CHARS],
        "documents": [
            {
                "fileId": d.file_id,
                "name": d.file_name,
                "roundNumber": d.round_number,
                "taskNumber": d.task_number,
                "actionNumber": d.action_number,
            }
            for d in m.documents
        ],
    }


@guarded
async def read_workflow_messages(args: MessagesArgs, ctx: ToolContext) -> ToolResult:
    workflow = await ctx.services.files.workflows.load(args.workflow_id, ctx.run)
    messages = workflow.messages[-args.limit :]
    lines = []
    for m in messages:
        text = " ".join(m.message.split())[:MESSAGE_CHARS] or "(no text)"
        files = "".join(f"\n    file {d.file_name} (file id {d.file_id})" for d in m.documents)
        lines.append(f"[{m.role}/{m.status}, round {m.round_number}] {text}{files}")
    shown = "\n".join(lines) or "(no messages)"
    return ToolResult.ok(
        f"workflow {workflow.id}: {len(messages)} of {len(workflow.messages)} message(s)\n{shown}",
        data={
            "workflowId": workflow.id,
            "total": len(workflow.messages),
            "messages": [_message_wire(m) for m in messages],
        },
    )


def history_tools() -> list[Tool]:
    """The cross-workflow tools (in the ``core`` toolbox, top-level runs only)."""
    spec: list[ToolSpec] = [
        ("listWorkflowHistory", "List your earlier workflows (conversations): id, title, messages, last activity.", HistoryArgs, list_workflow_history, True),
        ("readWorkflowMessages", "Read the messages (and their files) of one of your workflows.", MessagesArgs, read_workflow_messages, True),
    ]  # fmt: skip
    tools = tools_from(spec)
    for tool in tools:
        tool.top_level_only = True
    return tools
