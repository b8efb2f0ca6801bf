"""The action bridge (seed 003, the workflow side): what connects actions to the chat
workflow (the conversation) they run in.

- **Out:** the files an action produced (its :class:`~nyla.models.actions.ActionResult`'s
  ``documents``) become FileItem → ChatDocument → ChatMessage in the caller's chat workflow,
  numbered with the round, task and action of the call (:func:`bind_documents`,
  :func:`bridge_result`). An agent's action tool is round *r*, task *t* (the call's place in
  the round), action 1; a workflow run started by that call keeps *r* and *t* and numbers
  its nodes as actions 1, 2, ... (:func:`step_context`).
- **In:** a document-consuming parameter (:data:`~nyla.models.actions.DocumentList`, any
  file reference) takes file ids, reference objects (``{"type": "file", "id": ...}``) or the
  workflow's chat documents (``docItem:<id>``, ``docList:<label>``, ``{"id": ...}``,
  ``{"documents": [...]}``); :func:`resolve_document_list` turns every form into file ids,
  in this one place, before the owned-id check and the handler see them.
- **Binding checks the right to change the workflow:** :func:`check_can_change` puts the
  workflow id through the kernel's one owned-id check (:mod:`nyla.agent.authorize`, kind
  ``workflow``); a workflow the caller may not change is refused before the action runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel

from nyla.agent.authorize import Owned, authorize
from nyla.files.docrefs import ACCEPTED_SHAPES
from nyla.models.chat import DOC_ITEM, ChatDocument, ChatMessage, ChatWorkflow
from nyla.models.files import FileItem
from nyla.models.tools import ToolContext, ToolResult

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.models.agent import RunContext

DOC_LIST = "docList:"


class DocumentListError(ValueError):
    """A document list in no accepted form (``code`` ``INVALID_TYPE``), or naming a chat
    document the workflow lacks (``NOT_FOUND``)."""

    def __init__(self, message: str, code: str = "INVALID_TYPE") -> None:
        super().__init__(message)
        self.code = code


class WorkflowBindingError(PermissionError):
    """Documents cannot be bound to a workflow the caller may not change; ``result`` is the
    refusal as a tool result."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.error)
        self.result = result


# ---- in: the tolerant document list ------------------------------------------------------


def resolve_document_list(value: Any, workflow: ChatWorkflow | None) -> list[str]:
    """The file ids ``value`` names, in order, each once. Accepted: a file id, ``docItem:<id>``
    or ``docList:<label>``; an object ``{"type": "file", "id": ...}``, one with a ``fileId``
    (a chat document or saved file as the wire shows it), or ``{"id": ...}`` (a chat document,
    else a file); ``{"documents": [...]}``; or a list of these. A bare id is the chat document
    of that id when ``workflow`` has one, else a file id (checked later like any file id)."""
    found: list[str] = []
    for file_id in _walk(value, workflow, depth=0):
        if file_id not in found:
            found.append(file_id)
    return found


def _walk(value: Any, workflow: ChatWorkflow | None, depth: int) -> list[str]:
    if depth > 3:
        raise DocumentListError(f"document list nested too deep; accepted: {_ACCEPTED}")
    if isinstance(value, str):
        return _from_string(value.strip(), workflow)
    if isinstance(value, Mapping):
        return _from_object(value, workflow, depth)
    if isinstance(value, list | tuple):
        return [f for item in value for f in _walk(item, workflow, depth + 1)]
    raise DocumentListError(
        f"invalid document reference of type {type(value).__name__}; accepted: {_ACCEPTED}"
    )


_ACCEPTED = f'a file id, {{"type": "file", "id": "<id>"}}, {{"fileId": "<id>"}}, {ACCEPTED_SHAPES}'


def _from_string(text: str, workflow: ChatWorkflow | None) -> list[str]:
    if not text:
        raise DocumentListError(f"empty document reference; accepted: {_ACCEPTED}", "INVALID_VALUE")
    if text.startswith(DOC_ITEM):
        return [_chat_document(text[len(DOC_ITEM) :].strip(), workflow, text).file_id]
    if text.startswith(DOC_LIST):
        return _labelled(text[len(DOC_LIST) :].strip(), workflow, text)
    if workflow is not None:
        hit = next((d for d in workflow.documents() if d.id == text), None)
        if hit is not None:
            return [hit.file_id]
    return [text]


def _from_object(obj: Mapping[str, Any], workflow: ChatWorkflow | None, depth: int) -> list[str]:
    if "documents" in obj:
        return _walk(obj["documents"], workflow, depth + 1)
    kind = obj.get("type")
    if kind is not None and kind != "file":
        raise DocumentListError(f"a {kind!r} reference is no document; accepted: {_ACCEPTED}")
    ident = obj.get("fileId") or obj.get("id") or obj.get("documentId")
    if not isinstance(ident, str) or not ident.strip():
        raise DocumentListError(
            f"a document object needs a string 'id' or 'fileId', got keys {sorted(obj)}; "
            f"accepted: {_ACCEPTED}"
        )
    if "fileId" in obj or kind == "file":
        return [ident.strip()]
    return _from_string(ident.strip(), workflow)


def _chat_document(doc_id: str, workflow: ChatWorkflow | None, ref: str) -> ChatDocument:
    if workflow is None:
        raise DocumentListError(
            f"{ref} names a chat document, but this call runs in no conversation; "
            "pass the file id instead",
            "NOT_FOUND",
        )
    hit = next((d for d in workflow.documents() if d.id == doc_id), None)
    if hit is None:
        raise DocumentListError(
            f"no document in this conversation matches {ref}; use the docItem reference "
            "a tool returned, or the file id",
            "NOT_FOUND",
        )
    return hit


def _labelled(label: str, workflow: ChatWorkflow | None, ref: str) -> list[str]:
    messages = workflow.messages if workflow is not None else []
    hits = [
        d.file_id
        for m in messages
        if label and m.documents_label and m.documents_label.startswith(label)
        for d in m.documents
    ]
    if not hits:
        raise DocumentListError(f"no document in this conversation matches {ref}", "NOT_FOUND")
    return hits


# ---- the right to change a workflow --------------------------------------------------------


class _Binding(BaseModel):
    workflow_id: Annotated[str, Owned("workflow")]


async def check_can_change(
    workflow_id: str, context: RunContext, db: Database | None
) -> ToolResult | None:
    """``None`` when ``context``'s user may change the chat workflow ``workflow_id`` (bind
    documents to it), else the refusal — decided by the kernel's one owned-id check."""
    refusal = await authorize(
        SimpleNamespace(name="bind documents"),
        _Binding(workflow_id=workflow_id),
        ToolContext(run=context),
        db,
    )
    if refusal is None:
        return None
    return ToolResult.fail(
        f"documents cannot be bound to workflow {workflow_id!r}: it is not a workflow you "
        "may change",
        "ACCESS_DENIED",
        field="workflowId",
        suggestion="use your own conversation's id, or leave workflowId out",
    )


async def open_workflow(
    store: Any, workflow_id: str, context: RunContext, db: Database | None
) -> ChatWorkflow:
    """The chat workflow ``workflow_id`` with its messages, to bind documents to (``store``:
    the file store's :class:`~nyla.files.bridge.WorkflowStore`; the run's own workflow is
    created when new). :class:`WorkflowBindingError` when the caller may not change it."""
    refusal = await check_can_change(workflow_id, context, db)
    if refusal is not None:
        raise WorkflowBindingError(refusal)
    workflow: ChatWorkflow = await store.load(workflow_id, context)
    return workflow


# ---- out: result documents into the conversation --------------------------------------------


def node_message_id(run_id: str, node_id: str) -> str:
    """The id of the message that binds the documents of node ``node_id`` of workflow run
    ``run_id``: the same on every attempt, so a node run again after a crash replaces its
    documents instead of binding them a second time."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"nyla:workflow-run/{run_id}/node/{node_id}"))


def step_context(
    ctx: ToolContext,
    *,
    action_number: int,
    task_number: int | None = None,
    round_number: int | None = None,
    workflow: ChatWorkflow | None = None,
) -> ToolContext:
    """``ctx`` for one step of a workflow run: its documents are numbered ``action_number``
    within the task (and round) of ``ctx`` — the agent call that started the run — unless
    given; ``workflow`` binds them to another chat workflow (opened with
    :func:`open_workflow`). Outside an agent run, round and task are 1."""
    return ctx.model_copy(
        update={
            "round": round_number if round_number is not None else max(ctx.round, 1),
            "task_number": task_number if task_number is not None else max(ctx.task_number, 1),
            "action_number": action_number,
            "workflow": workflow if workflow is not None else ctx.workflow,
        }
    )


async def bind_documents(
    ctx: ToolContext,
    files: Sequence[FileItem | str],
    *,
    label: str,
    message: str = "",
    message_id: str | None = None,
) -> list[ChatDocument]:
    """Bind ``files`` (stored files, or their ids) to ``ctx.workflow`` as chat documents in
    one new ChatMessage (status ``step``, documents label ``<label>:<message id>``), each
    numbered ``ctx.round``, ``ctx.task_number``, ``ctx.action_number``. Nothing without a
    workflow or files; a file id the run cannot read raises ``LookupError``. The caller has
    checked the right to change the workflow (:func:`check_can_change`). ``message_id``
    (:func:`node_message_id` for a workflow node) makes the bind idempotent: bound again
    under the same id, the message and its documents replace those bound before."""
    workflow = ctx.workflow
    if workflow is None or not files:
        return []
    items = [await _item(ctx, f) for f in files]
    message_id = message_id or str(uuid.uuid4())
    documents = [
        ChatDocument(
            id=str(uuid.uuid4()),
            message_id=message_id,
            file_id=item.id,
            file_name=item.name,
            mime_type=item.mime_type,
            size=item.size,
            round_number=ctx.round,
            task_number=ctx.task_number,
            action_number=ctx.action_number,
        )
        for item in items
    ]
    chat_message = ChatMessage(
        id=message_id,
        role="assistant",
        status="step",
        message=message,
        documents_label=f"{label}:{message_id[:8]}",
        round_number=ctx.round,
        run_id=ctx.run_id,
        documents=documents,
    )
    await ctx.services.files.workflows.store_message_with_documents(workflow, chat_message)
    return documents


async def _item(ctx: ToolContext, file: FileItem | str) -> FileItem:
    if isinstance(file, FileItem):
        return file
    item = await ctx.services.files.get(file, ctx.run)
    if item is None:
        raise LookupError(f"file {file!r} not found")
    return item


def document_wire(document: ChatDocument) -> dict[str, Any]:
    """A bound document as a result's ``data.documents`` shows it (camelCase)."""
    return document.to_wire()


async def bridge_result(
    ctx: ToolContext,
    result: ToolResult,
    files: Sequence[FileItem | str],
    *,
    label: str,
    refs_in_text: bool = True,
    message_id: str | None = None,
) -> ToolResult:
    """``result`` with ``files`` bound to the run's workflow (:func:`bind_documents`): each
    document listed under ``data["documents"]`` (``data`` becomes an object when it was
    none) and — for a model reading the text, ``refs_in_text`` — its ``docItem`` reference
    and file id appended to the text. A workflow node keeps its text clean (it flows to the
    next node) and hands its documents on in ``data`` only. Without a workflow the files
    are listed by file id only; ``message_id`` as for :func:`bind_documents`."""
    documents = await bind_documents(
        ctx, files, label=label, message=result.content[:500], message_id=message_id
    )
    if documents:
        listed = [document_wire(d) for d in documents]
        lines = [f"  documentList ref: {DOC_ITEM}{d.id} (file id: {d.file_id})" for d in documents]
    else:
        ids = [f.id if isinstance(f, FileItem) else f for f in files]
        listed = [{"fileId": i, "documentRef": None} for i in ids]
        lines = [f"  file id: {i}" for i in ids]
    if not listed:
        return result
    text = "\n".join([result.content or "done", "documents:", *lines])
    if not refs_in_text:
        text = result.content
    data = result.data
    if data is None:
        data = {"documents": listed}
    elif isinstance(data, dict):
        data = {**data, "documents": listed}
    return result.model_copy(update={"content": text, "data": data})
