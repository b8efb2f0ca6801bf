"""File and folder names and mime types from hostile or odd sources, on real PostgreSQL."""

from __future__ import annotations

import pytest

from nyla.files.names import MAX_NAME_CHARS, clean_mime, clean_name, download_name
from nyla.files.store import FileStore
from nyla.models.agent import RunContext

ANNA = RunContext(user_id="anna", mandate_id="m1", feature_instance_id="fi1")


@pytest.fixture
def store(db) -> FileStore:
    return FileStore(db)


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("  Bericht €.pdf ", "Bericht €.pdf"),
        ("日本語.txt", "日本語.txt"),
        ("a\x00b.txt", "a b.txt"),
        ("evil\r\nSet-Cookie: x.txt", "evil Set-Cookie: x.txt"),
        ("tab\there\x7f\x85.txt", "tab here .txt"),
        ("half\ud800.txt", "half\ufffd.txt"),
    ],
)
def test_a_name_loses_control_characters_and_surrogates(raw, stored):
    assert clean_name(raw) == stored


@pytest.mark.parametrize("raw", ["", "   ", "\x00\r\n", None])
def test_an_empty_name_is_refused(raw):
    with pytest.raises(ValueError, match="name"):
        clean_name(raw)


def test_a_name_longer_than_its_column_is_refused_not_cut():
    assert clean_name("x" * MAX_NAME_CHARS) == "x" * MAX_NAME_CHARS
    with pytest.raises(ValueError, match=f"at most {MAX_NAME_CHARS}"):
        clean_name("x" * (MAX_NAME_CHARS + 1))


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("application/pdf", "application/pdf"),
        ("text/plain; charset=utf-8", "text/plain; charset=utf-8"),
        ("application/vnd.ms-excel", "application/vnd.ms-excel"),
        ("text/html\r\nX-Evil: 1", None),
        ("not a mime", None),
        ("text/" + "x" * 300, None),
        ("", None),
        (None, None),
    ],
)
def test_only_a_plain_mime_type_is_kept(raw, kept):
    assert clean_mime(raw) == kept


async def test_the_store_keeps_every_name_it_accepts(store):
    for raw, stored in [("a\x00b.txt", "a b.txt"), ("Zürich €.md", "Zürich €.md")]:
        item = await store.save(raw, b"x" + raw.encode("utf-8", "replace"), ANNA)
        assert item.name == stored
        assert (await store.get(item.id, ANNA)).name == stored
    renamed = await store.update(item.id, ANNA, name="new\nname.md")
    assert renamed.name == "new name.md"
    with pytest.raises(ValueError):
        await store.save("y" * (MAX_NAME_CHARS + 1), b"x", ANNA)
    with pytest.raises(ValueError):
        await store.copy(item.id, ANNA, name="\x00")
    assert [i.name for i in await store.list(ANNA)] == ["new name.md", "a b.txt"]


async def test_a_bad_mime_type_is_guessed_from_the_name(store):
    item = await store.save("report.pdf", b"%PDF", ANNA, mime_type="text/html\r\nX-Evil: 1")
    assert item.mime_type == "application/pdf"
    long = await store.save("notes.txt", b"#", ANNA, mime_type="text/" + "x" * 300)
    assert long.mime_type == "text/plain"


async def test_folder_names_are_cleaned_too(store):
    folder = await store.create_folder("Belege\x002026", ANNA)
    assert folder.name == "Belege 2026"
    with pytest.raises(ValueError):
        await store.create_folder("a/b", ANNA)
    with pytest.raises(ValueError):
        await store.rename_folder(folder.id, "z" * (MAX_NAME_CHARS + 1), ANNA)


@pytest.mark.parametrize(
    ("stored", "offered"),
    [
        ("../../etc/passwd", "passwd"),
        ("..\\..\\Windows\\win.ini", "win.ini"),
        ("C:\\Users\\ada\\q3.xlsx", "q3.xlsx"),
        ("reports/2026/Q3 report.pdf", "Q3 report.pdf"),
        ("a/b/", "download"),
        ("..", "download"),
        ("...", "download"),
        ("", "download"),
        (" x\ny.txt ", "x y.txt"),
        ("Zürich 日本.txt", "Zürich 日本.txt"),
    ],
)
def test_a_download_is_offered_under_its_base_name(stored, offered):
    assert download_name(stored) == offered
