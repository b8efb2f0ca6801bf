"""Prompt enrichment (seeds: ``runAgent``'s file metadata): before the loop starts, the run's
system prompt gets a block naming the files the prompt attaches or references — name, type,
size and a structure summary (pages, sections, tables, rows...) — so the agent knows what it
has before it reads anything.

Referenced files are the file ids (and ``docItem:`` references to chat documents) in the
prompt — the host names attached files there by id. Each is looked up with the run's scope:
a file the run may not read is left out, as if it did not exist. The structure summary is the
knowledge store's (its index of the file, when the run may use the store), else the file's
own extraction for a file up to :data:`EXTRACT_LIMIT_BYTES` (:data:`EXTRACT_TOTAL_BYTES` for
all of them). Computed once per run; the block
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
#: bytes of the listed files' contents read for their summaries at most, together
EXTRACT_TOTAL_BYTES = 8 * 1024 * 1024
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
    """The files among ``ids`` the run may read (a chat document's id stands for its file),
    in the order the prompt names them; one query, the contents not loaded."""
    from sqlalchemy import or_, select
    from sqlalchemy.orm import defer

    from nyla.files.scope import readable
    from nyla.files.store import to_item
    from nyla.files.tables import DocumentRow, FileRow

    documents = select(DocumentRow.file_id).where(DocumentRow.id.in_(ids))
    statement = (
        select(FileRow)
        .options(defer(FileRow.content))
        .where(or_(FileRow.id.in_(ids), FileRow.id.in_(documents)), readable(FileRow, context))
    )
    async with services.db.read_session() as s:
        rows = (await s.scalars(statement)).all()
    order = {file_id: n for n, file_id in enumerate(ids)}
    items = [to_item(row) for row in rows]
    return sorted(items, key=lambda item: (order.get(item.id, len(order)), item.name))


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


def _extractable(items: list[FileItem], indexed: dict[str, str]) -> list[FileItem]:
    """The files without an index summary whose own extraction is worth it: a known kind,
    each up to :data:`EXTRACT_LIMIT_BYTES`, together up to :data:`EXTRACT_TOTAL_BYTES`."""
    from nyla.knowledge.extract import detect_kind

    chosen, total = [], 0
    for item in items:
        if indexed.get(item.id) or item.size > EXTRACT_LIMIT_BYTES:
            continue
        if detect_kind(item.name, item.mime_type) is None:
            continue
        if total + item.size > EXTRACT_TOTAL_BYTES:
            break
        chosen.append(item)
        total += item.size
    return chosen


async def _extracted_summaries(
    services: AgentServices, items: list[FileItem], context: RunContext
) -> dict[str, str]:
    """The files' own structure summaries (their extraction; one read for all contents,
    the parsing off the event loop); a file that cannot be read is left out."""
    if not items:
        return {}
    from sqlalchemy import select

    from nyla.cpu import off_loop
    from nyla.files.scope import readable
    from nyla.files.tables import FileRow
    from nyla.knowledge.extract import extract

    statement = select(FileRow.id, FileRow.content).where(
        FileRow.id.in_([i.id for i in items]), readable(FileRow, context)
    )
    async with services.db.read_session() as s:
        contents = {
            str(file_id): bytes(content or b"") for file_id, content in await s.execute(statement)
        }
    summaries = {}
    for item in items:
        content = contents.get(item.id)
        if content is None:
            continue
        try:
            document = await off_loop(len(content), extract, item.name, content, item.mime_type)
        except Exception as exc:  # an unreadable file is still named, without a summary
            log.info("no structure summary for %s: %s", item.id, exc)
            continue
        summaries[item.id] = document.summary
    return summaries


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
        extracted = await _extracted_summaries(services, _extractable(shown, indexed), context)
        summaries = {**extracted, **{k: v for k, v in indexed.items() if v}}
        lines = [file_line(item, summaries.get(item.id, "")) for item in shown]
    except Exception as exc:  # the files are still readable by id: the run goes on
        log.warning("no file briefing: %s", exc)
        return None
    return briefing_block(lines, len(items))


def with_briefing(system_prompt: str | None, default: str, block: str | None) -> str | None:
    """``system_prompt`` (or ``default``, the prompt the loop would use) with ``block``."""
    if block is None:
        return system_prompt
    return f"{system_prompt or default}\n\n{block}"
