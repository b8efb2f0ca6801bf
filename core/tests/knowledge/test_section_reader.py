"""``KnowledgeService.read_section``: a section of an indexed Markdown or DOCX file read back
verbatim (across chunk overlaps), unknown sections answered with the ones that exist, another
owner's file refused like a missing one, and the cache: a hit reads only the file's version
row, a re-indexed file is read again."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from sqlalchemy import event

from nyla.errors import FileAccessError
from nyla.knowledge.section_reader import LISTED_SECTIONS, SectionReader, join_chunks
from nyla.models.knowledge import UnknownSectionError

from .conftest import DATA, ctx, item

LONG = " ".join(f"Step {n} unpacks the archive into folder number {n}." for n in range(120))
MARKDOWN = f"""# Guide

Intro text.

## Setup

Before installing, check the disk.

### Install

{LONG}

| Tool | Version |
|---|---|
| nyla | 1 |

### Configure

Edit the settings file.

## Usage

Run it.
"""


@contextmanager
def statements(kernel):
    """The SQL statements run on the kernel's engine while the block runs."""
    seen: list[str] = []

    def record(conn, cursor, statement, *args):
        seen.append(statement)

    engine = kernel.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def _index(kernel, file_id: str, body: bytes, name: str = "guide.md", user: str = "u1"):
    result = await kernel.knowledge.indexing.index_file(
        item(file_id, name, user=user), body, context=ctx(user)
    )
    assert result.status == "indexed", result.error
    return result


async def test_a_markdown_section_is_read_verbatim_across_its_chunks(kernel):
    result = await _index(kernel, "g1", MARKDOWN.encode())
    assert result.chunks > 3  # the Install body is split with overlaps
    found = await kernel.knowledge.read_section("g1", "Setup > Install", ctx())
    assert found.section == "section Guide > Setup > Install"
    assert found.level == 3
    table = "| Tool | Version |\n| nyla | 1 |"
    assert found.text == f"Install\n\n{LONG}\n\n{table}"
    # a number of the structure's list, a unique title, the ref itself: the same section
    for name in ("3", "install", "section Guide > Setup > Install", "Guide>Setup>Install"):
        again = await kernel.knowledge.read_section("g1", name, ctx())
        assert again.text == found.text
    setup = await kernel.knowledge.read_section("g1", "Guide > Setup", ctx())
    assert setup.text.startswith("Setup\n\nBefore installing, check the disk.\n\nInstall\n\n")
    assert setup.text.endswith("Configure\n\nEdit the settings file.")
    assert "Run it." not in setup.text


async def test_a_docx_section_is_read_verbatim(kernel):
    from nyla.knowledge.extract import extract

    body = (DATA / "sample.docx").read_bytes()
    await _index(kernel, "d1", body, name="sample.docx")
    sections = extract("sample.docx", body).structure["sections"]
    chosen = sections[-1]
    expected = [
        o.text
        for o in extract("sample.docx", body).objects
        if o.context_ref == chosen["ref"] or o.context_ref.startswith(chosen["ref"] + " ")
    ]
    found = await kernel.knowledge.read_section("d1", str(len(sections)), ctx())
    assert found.section == chosen["ref"]
    assert found.text == "\n\n".join(expected)


async def test_an_unknown_section_lists_the_ones_there_are(kernel):
    await _index(kernel, "g2", MARKDOWN.encode())
    with pytest.raises(UnknownSectionError) as caught:
        await kernel.knowledge.read_section("g2", "Teardown", ctx())
    message = str(caught.value)
    assert "'Teardown' is not a section" in message
    assert "Guide > Setup > Install" in message and "Guide > Usage" in message
    many = "\n".join(f"# Part {n}\n\ntext {n}\n" for n in range(LISTED_SECTIONS + 5))
    await _index(kernel, "many", many.encode(), name="many.md")
    with pytest.raises(UnknownSectionError) as caught:
        await kernel.knowledge.read_section("many", "Part 99", ctx())
    assert len(caught.value.available) == LISTED_SECTIONS
    assert str(caught.value).endswith("and 5 more")


async def test_another_owners_file_is_refused_like_a_missing_one(kernel):
    await _index(kernel, "bobs", MARKDOWN.encode(), user="bob")
    assert (await kernel.knowledge.read_section("bobs", "Usage", ctx("bob"))).text
    for file_id in ("bobs", "nowhere"):
        with pytest.raises(FileAccessError, match="not in your knowledge store"):
            await kernel.knowledge.read_section(file_id, "Usage", ctx("u1"))


async def test_a_cache_hit_reads_only_the_version_row_and_a_reindex_is_read_again(kernel):
    await _index(kernel, "g3", MARKDOWN.encode())
    with statements(kernel) as first:
        before = await kernel.knowledge.read_section("g3", "Usage", ctx())
    with statements(kernel) as second:
        assert (await kernel.knowledge.read_section("g3", "Usage", ctx())) == before
    assert sum("knowledge_chunk" in s for s in first) == 1
    assert [s for s in second if "SELECT" in s.upper()] and not any(
        "knowledge_chunk" in s or "structure" in s for s in second
    )
    assert len(second) < len(first)
    # a cached section is still refused to another owner
    with pytest.raises(FileAccessError):
        await kernel.knowledge.read_section("g3", "Usage", ctx("eve"))
    await _index(kernel, "g3", MARKDOWN.replace("Run it.", "Run it twice.").encode())
    after = await kernel.knowledge.read_section("g3", "Usage", ctx())
    assert after.text == "Usage\n\nRun it twice."


async def test_the_cache_is_bounded_by_entries_and_characters(kernel):
    await _index(kernel, "g4", MARKDOWN.encode())

    async def chunk_reads(reader, section):
        with statements(kernel) as seen:
            await reader.read("g4", section, ctx())
        return sum("knowledge_chunk" in s for s in seen)

    # two entries: the section list and one text; a second text pushes the first out
    small = SectionReader(kernel.db, size=2)
    assert [await chunk_reads(small, s) for s in ("Usage", "Usage", "Configure", "Usage")] == [
        1,
        0,
        1,
        1,
    ]
    # a text over the character budget is never held
    tight = SectionReader(kernel.db, budget_chars=100)
    assert [await chunk_reads(tight, s) for s in ("Install", "Install", "Usage", "Usage")] == [
        1,
        1,
        1,
        0,
    ]


def test_chunks_join_at_their_overlap_only():
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    assert join_chunks([("s", text[:40]), ("s", text[24:])]) == text
    assert join_chunks([("s", "one two"), ("s", "two three")]) == "one two\n\ntwo three"
    assert join_chunks([("a", text[:40]), ("b", text[24:])]) == f"{text[:40]}\n\n{text[24:]}"
