"""The text search configurations of the full-text half of hybrid search: one per detected
language (PostgreSQL's Snowball stemmer and stop words of German, English, French, Italian)
and ``nyla_simple`` for text of no known language, each folding accents first (the
``unaccent`` dictionary: ``Zürich`` and ``Zurich`` are one word).

They live in the schema the store's tables live in and are created the first time a write or
a search needs them (under an advisory lock: two processes must not race in the catalog). A
server without the ``unaccent`` extension gets them without accent folding, and a warning.

A chunk's terms are built in its own language (``knowledge_chunk.language``, set by the
detector of :mod:`nyla.knowledge.language`), its file's name and path among them with
weight ``A``, so a file whose body says little is still found by its name.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import text

from nyla.knowledge.language import detect_all
from nyla.knowledge.vectors import CHUNK_ID_BITS, in_files

log = logging.getLogger(__name__)

#: language code -> (configuration of nyla's, PostgreSQL's built-in it copies)
CONFIGS = {
    "de": ("nyla_de", "german"),
    "en": ("nyla_en", "english"),
    "fr": ("nyla_fr", "french"),
    "it": ("nyla_it", "italian"),
    "": ("nyla_simple", "simple"),
}
#: the configuration of text of no known language (and of lookups an older nyla built)
SIMPLE = CONFIGS[""][0]

#: the token types that can hold accented letters (the ASCII ones need no folding)
_ACCENTED_TOKENS = "word, hword, hword_part"


def config_of(column: str) -> str:
    """SQL: the configuration of a chunk whose language code is in ``column``."""
    cases = " ".join(
        f"WHEN '{code}' THEN '{name}'::regconfig" for code, (name, _) in CONFIGS.items() if code
    )
    return f"(CASE {column} {cases} ELSE '{SIMPLE}'::regconfig END)"


async def ensure_configs(session: Any) -> None:
    """Create the configurations in the session's current schema when missing (inside the
    caller's transaction: a rollback takes them back, the next call creates them again),
    and the partial index that finds lookup rows an older nyla built (for
    :func:`reanalyze`; it holds no new row)."""
    probe = (
        "SELECT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = :name "
        "AND cfgnamespace = current_schema()::regnamespace)"
    )
    last = CONFIGS["it"][0]
    if (await session.execute(text(probe), {"name": last})).scalar():
        return
    await session.execute(text("SELECT pg_advisory_xact_lock(hashtext('nyla.text-search'))"))
    if (await session.execute(text(probe), {"name": last})).scalar():
        return
    await session.execute(
        text(
            "CREATE INDEX IF NOT EXISTS ix_knowledge_chunk_lookup_unanalyzed "
            "ON knowledge_chunk_lookup (chunk_id) WHERE language IS NULL"
        )
    )
    folding = await _unaccent(session)
    for name, builtin in CONFIGS.values():
        await session.execute(text(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {name}"))
        await session.execute(text(f"CREATE TEXT SEARCH CONFIGURATION {name} (COPY = {builtin})"))
        if folding:
            stem = "simple" if builtin == "simple" else f"{builtin}_stem"
            await session.execute(
                text(
                    f"ALTER TEXT SEARCH CONFIGURATION {name} ALTER MAPPING FOR "
                    f"{_ACCENTED_TOKENS} WITH unaccent, {stem}"
                )
            )


async def _unaccent(session: Any) -> bool:
    """True when the ``unaccent`` dictionary is there (created when the server has it)."""
    found = "SELECT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'unaccent')"
    if (await session.execute(text(found))).scalar():
        return True
    try:
        async with session.begin_nested():
            await session.execute(text("CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public"))
    except Exception as exc:
        log.warning(
            "the unaccent extension is not available (%s): full-text search will not fold "
            "accents (Zurich will not find Zürich)",
            str(exc).splitlines()[0],
        )
        return False
    return True


def tsvector_sql(chunk: str = "c", file: str = "f") -> str:
    """SQL: the terms of chunk ``chunk`` in its language, with its file's name and path
    (``file``, the file index row) as weight-``A`` terms."""
    config = config_of(f"{chunk}.language")
    title = f"translate(coalesce({file}.source_path, '') || ' ' || {file}.name, '/\\_.-', '     ')"
    return f"setweight(to_tsvector({config}, {title}), 'A') || to_tsvector({config}, {chunk}.data)"


async def write_lookups(session: Any, file_nos: list[int]) -> None:
    """Write the lookup rows (terms in the chunk's language, scope + content hash) of the
    chunks of ``file_nos``, which have none yet."""
    if not file_nos:
        return
    await ensure_configs(session)
    await session.execute(
        text(
            "INSERT INTO knowledge_chunk_lookup "
            "(chunk_id, owner_key, content_hash, language, tsv) "
            f"SELECT c.id, c.owner_key, c.content_hash, c.language, {tsvector_sql()} "
            "FROM knowledge_chunk c JOIN knowledge_file_index f "
            f"ON f.file_no = (c.id >> {CHUNK_ID_BITS}) WHERE {in_files(file_nos)}"
        )
    )


async def reanalyze(session: Any, batch: int = 1000) -> int:
    """Give up to ``batch`` lookup rows an older nyla built (``language`` is ``NULL``:
    ``simple`` terms, no accents folded) their language and terms as new rows get them;
    returns how many (0: none left). Rows another transaction holds are skipped."""
    await ensure_configs(session)
    found = list(
        await session.execute(
            text(
                "SELECT c.id, c.data FROM knowledge_chunk_lookup t "
                "JOIN knowledge_chunk c ON c.id = t.chunk_id WHERE t.language IS NULL "
                "ORDER BY t.chunk_id LIMIT :n FOR UPDATE OF t SKIP LOCKED"
            ),
            {"n": batch},
        )
    )
    if not found:
        return 0
    by_file: dict[int, list[tuple[int, str]]] = {}
    for chunk, data in found:
        by_file.setdefault(int(chunk) >> CHUNK_ID_BITS, []).append((int(chunk), data))
    ids, languages = [], []
    for pieces in by_file.values():
        ids += [chunk for chunk, _ in pieces]
        languages += detect_all([data for _, data in pieces])
    await session.execute(
        text(
            "UPDATE knowledge_chunk c SET language = v.language "
            "FROM unnest(CAST(:ids AS bigint[]), CAST(:languages AS text[])) "
            "AS v(id, language) WHERE c.id = v.id"
        ),
        {"ids": ids, "languages": languages},
    )
    await session.execute(
        text(
            f"UPDATE knowledge_chunk_lookup t SET language = c.language, tsv = {tsvector_sql()} "
            "FROM knowledge_chunk c JOIN knowledge_file_index f "
            f"ON f.file_no = (c.id >> {CHUNK_ID_BITS}) "
            "WHERE c.id = t.chunk_id AND t.chunk_id = ANY(CAST(:ids AS bigint[]))"
        ),
        {"ids": ids},
    )
    return len(ids)
