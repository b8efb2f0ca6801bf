"""Prompt enrichment (seeds: ``runAgent``'s file metadata): before the loop starts, the run's
system prompt gets a block naming the files the prompt attaches or references — name, type,
size and a structure summary (pages, sections, tables, rows...) — so the agent knows what it
has before it reads anything.

Referenced files are the file ids (and ``docItem:`` references to chat documents) in the
prompt — the host names attached files there by id. Each is looked up with the run's scope:
a file the run may not read is left out, as if it did not exist. The structure summary is the
knowledge store's (its index of the file, when the run may use the store), else the file's
own extraction for a file up to :data:`EXTRACT_LIMIT_BYTES`. Computed once per run; the block
is bounded (:data:`MAX_FILES` lines, then a count of the rest, each line cut). The names go
to the model through the AI service like every other text, so a run that neutralises sees
them neutralised.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nyla.agent.ports import AgentServices
    from nyla.models.agent import RunContext
    from nyla.models.files import FileItem

log = logging.getLogger(__name__)

#: files listed at most; the rest are counted
MAX_FILES = 12
#: ids looked at most in one prompt (a prompt full of ids costs no more than this)
MAX_IDS = 50
#: characters of one file's line at most
MAX_LINE_CHARS = 240
#: files larger than this get no structure summary unless the knowledge store has one
EXTRACT_LIMIT_BYTES = 2 * 1024 * 1024
HEADING = "## Files in this request"
_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)


def referenced_ids(prompt: str) -> list[str]:
    """File or chat-document ids in ``prompt``, in order, each once (at most
    :data:`MAX_IDS`)."""
    seen: dict[str, None] = {}
    for match in _ID.finditer(prompt):
        seen.setdefault(match.group(0).lower(), None)
        if len(seen) >= MAX_IDS:
            break
    return list(seen)


def size_text(size: int) -> str:
    """A byte count as people read it."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def file_line(item: FileItem, summary: str) -> str:
    """One file's line: name, id, type, size, structure."""
    line = f"- {item.name} (file id {item.id}, {item.mime_type}, {size_text(item.size)})"
    if summary:
        line += f": {summary}"
    if len(line) > MAX_LINE_CHARS:
        line = line[: MAX_LINE_CHARS - 1] + "…"
    return line


def briefing_block(lines: list[str], total: int) -> str:
    """The block for the system prompt (``total`` files found, ``lines`` of the first)."""
    more = total - len(lines)
    tail = [f"- … and {more} more files (list them with the file tools)"] if more > 0 else []
    intro = "The request attaches or references these files (read them with the file tools):"
    return "\n".join([HEADING, intro, *lines, *tail])


async def _files(services: AgentServices, ids: list[str], context: RunContext) -> list[FileItem]:
    """The readable files among ``ids`` (a chat document's id stands for its file)."""
    found: dict[str, FileItem] = {}
    unresolved: list[str] = []
    for file_id in ids:
        item = await services.files.get(file_id, context)
        if item is None:
            unresolved.append(file_id)
        elif item.id not in found:
            found[item.id] = item
    for file_id in await _document_files(services, unresolved):
        item = await services.files.get(file_id, context)
        if item is not None and item.id not in found:
            found[item.id] = item
    return list(found.values())


async def _document_files(services: AgentServices, ids: list[str]) -> list[str]:
    """The file ids of the chat documents among ``ids`` (scope is checked on the file)."""
    if not ids:
        return []
    from sqlalchemy import select

    from nyla.files.tables import DocumentRow

    async with services.db.read_session() as s:
        rows = await s.scalars(select(DocumentRow.file_id).where(DocumentRow.id.in_(ids)))
        return [str(r) for r in rows if r]


async def _indexed_summaries(services: AgentServices, ids: list[str]) -> dict[str, str]:
    """The knowledge store's structure summary of the indexed files among ``ids``."""
    from sqlalchemy import select

    from nyla.tables.knowledge import FileContentIndex as Index

    async with services.db.read_session() as s:
        rows = await s.execute(
            select(Index.file_id, Index.object_summary).where(
                Index.file_id.in_(ids), Index.status == "indexed"
            )
        )
        return {str(file_id): str(summary or "") for file_id, summary in rows}


async def _extracted_summary(services: AgentServices, item: FileItem, context: RunContext) -> str:
    """The file's own structure summary (its extraction), '' when it cannot be read."""
    from nyla.cpu import off_loop
    from nyla.knowledge.extract import detect_kind, extract

    if item.size > EXTRACT_LIMIT_BYTES or detect_kind(item.name, item.mime_type) is None:
        return ""
    try:
        content = await services.files.read_bytes(item.id, context)
        document = await off_loop(len(content), extract, item.name, content, item.mime_type)
    except Exception as exc:  # an unreadable file is still named, without a summary
        log.info("no structure summary for %s: %s", item.id, exc)
        return ""
    return document.summary


async def file_briefing(
    services: AgentServices, prompt: str, context: RunContext, *, knowledge: bool = True
) -> str | None:
    """The block naming the files ``prompt`` attaches or references, or ``None`` (none, or
    they could not be looked up: the run goes on without). ``knowledge=False`` (a caller
    without ``service.knowledge``) never reads the knowledge store's index."""
    ids = referenced_ids(prompt)
    if not ids:
        return None
    try:
        items = await _files(services, ids, context)
        if not items:
            return None
        shown = items[:MAX_FILES]
        indexed = await _indexed_summaries(services, [i.id for i in shown]) if knowledge else {}
        lines = []
        for item in shown:
            summary = indexed.get(item.id) or await _extracted_summary(services, item, context)
            lines.append(file_line(item, summary))
    except Exception as exc:  # the files are still readable by id: the run goes on
        log.warning("no file briefing: %s", exc)
        return None
    return briefing_block(lines, len(items))


def with_briefing(system_prompt: str | None, default: str, block: str | None) -> str | None:
    """``system_prompt`` (or ``default``, the prompt the loop would use) with ``block``."""
    if block is None:
        return system_prompt
    return f"{system_prompt or default}\n\n{block}"
