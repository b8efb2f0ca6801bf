"""The file store on real PostgreSQL: scope isolation, the ghost-duplicate fix, folders."""

from __future__ import annotations

import pytest

from nyla.errors import FileAccessError, FolderNotEmptyError
from nyla.files.store import FileStore
from nyla.models.agent import RunContext
from nyla.models.files import Scope

ANNA = RunContext(user_id="anna", mandate_id="m1", feature_instance_id="fi1")
BRUNO = RunContext(user_id="bruno", mandate_id="m1", feature_instance_id="fi1")
ANNA_OTHER_INSTANCE = RunContext(user_id="anna", mandate_id="m1", feature_instance_id="fi2")
CARLA_OTHER_MANDATE = RunContext(user_id="carla", mandate_id="m2")


@pytest.fixture
def store(db) -> FileStore:
    return FileStore(db)


async def test_save_get_read_roundtrip(store):
    item = await store.save("notes.txt", b"hello\nworld", ANNA, tags=["b", "a"])
    assert item.size == 11 and item.mime_type == "text/plain" and item.tags == ["a", "b"]
    assert len(item.content_hash) == 64 and item.scope is Scope.PERSONAL
    got = await store.get(item.id, ANNA)
    assert got is not None and got.name == "notes.txt" and got.user_id == "anna"
    assert await store.read_bytes(item.id, ANNA) == b"hello\nworld"


async def test_user_b_cannot_reach_user_a_personal_file_by_id(store):
    item = await store.save("secret.txt", b"salary: 100", ANNA)
    assert await store.get(item.id, BRUNO) is None
    with pytest.raises(FileAccessError):
        await store.read_bytes(item.id, BRUNO)
    with pytest.raises(FileAccessError):
        await store.write(item.id, b"overwritten", BRUNO)
    assert await store.delete(item.id, BRUNO) is False
    assert await store.list(BRUNO) == []
    assert await store.search_content(BRUNO, "salary") == []
    assert await store.read_bytes(item.id, ANNA) == b"salary: 100"  # untouched


async def test_shared_scopes_are_visible_to_their_members_only(store):
    instance = await store.save("team.txt", b"t", ANNA, scope=Scope.FEATURE_INSTANCE)
    mandate = await store.save("policy.txt", b"p", ANNA, scope=Scope.MANDATE)
    everyone = await store.save("readme.txt", b"r", ANNA, scope=Scope.GLOBAL)
    assert {i.name for i in await store.list(BRUNO)} == {"team.txt", "policy.txt", "readme.txt"}
    other = {i.name for i in await store.list(ANNA_OTHER_INSTANCE)}
    assert other == {"policy.txt", "readme.txt"}
    assert {i.name for i in await store.list(CARLA_OTHER_MANDATE)} == {"readme.txt"}
    assert await store.get(instance.id, CARLA_OTHER_MANDATE) is None
    assert await store.get(mandate.id, CARLA_OTHER_MANDATE) is None
    assert await store.get(everyone.id, CARLA_OTHER_MANDATE) is not None
    with pytest.raises(ValueError, match="feature instance"):
        await store.save("x", b"x", CARLA_OTHER_MANDATE, scope=Scope.FEATURE_INSTANCE)


async def test_identical_save_in_the_same_scope_reuses_the_file(store):
    first = await store.save("a.txt", b"same", ANNA)
    again = await store.save("a.txt", b"same", ANNA)
    assert again.id == first.id
    changed = await store.save("a.txt", b"different", ANNA)
    assert changed.id != first.id


async def test_ghost_duplicate_in_another_instance_is_not_reused(store):
    """Seed 003: the same user saving the same file in another feature instance must get a
    fresh copy it can read, not the other instance's file it cannot."""
    first = await store.save("report.pdf", b"%PDF", ANNA)
    second = await store.save("report.pdf", b"%PDF", ANNA_OTHER_INSTANCE)
    assert second.id != first.id
    assert await store.get(second.id, ANNA_OTHER_INSTANCE) is not None
    assert await store.get(first.id, ANNA_OTHER_INSTANCE) is None
    assert await store.find_duplicate("report.pdf", first.content_hash, ANNA) == first


async def test_list_filters_by_folder_tags_and_search(store):
    folder = await store.create_folder("Invoices", ANNA)
    a = await store.save("inv-1.txt", b"1", ANNA, folder_id=folder.id, tags=["2026", "paid"])
    await store.save("inv-2.txt", b"2", ANNA, folder_id=folder.id, tags=["2026"])
    await store.save("Notes_100%.md", b"3", ANNA)
    assert {i.name for i in await store.list(ANNA, folder_id=folder.id)} == {
        "inv-1.txt",
        "inv-2.txt",
    }
    assert [i.id for i in await store.list(ANNA, tags=["paid", "2026"])] == [a.id]
    assert [i.name for i in await store.list(ANNA, search="100%")] == ["Notes_100%.md"]
    assert [i.name for i in await store.list(ANNA, search="INV-1")] == ["inv-1.txt"]


async def test_write_append_replace_copy_rename_move(store):
    item = await store.save("log.txt", b"one", ANNA)
    item = await store.write(item.id, b"\ntwo", ANNA, mode="append")
    assert await store.read_text(item.id, ANNA) == "one\ntwo" and item.size == 7
    item, n = await store.replace(item.id, "o", "0", ANNA)
    assert n == 2 and await store.read_text(item.id, ANNA) == "0ne\ntw0"
    copy = await store.copy(item.id, ANNA, name="log-copy.txt")
    await store.write(copy.id, b"changed", ANNA)
    assert await store.read_text(item.id, ANNA) == "0ne\ntw0"  # independent copy
    folder = await store.create_folder("Archive", ANNA)
    moved = await store.update(item.id, ANNA, name="old.txt", folder_id=folder.id)
    assert (moved.name, moved.folder_id) == ("old.txt", folder.id)
    with pytest.raises(FileAccessError):  # a folder the caller cannot see
        await store.update(item.id, ANNA, folder_id="no-such-folder")


async def test_folders_nesting_move_and_recursive_delete(store):
    root = await store.create_folder("Projects", ANNA)
    child = await store.create_folder("Alpha", ANNA, parent_id=root.id)
    grandchild = await store.create_folder("Specs", ANNA, parent_id=child.id)
    await store.save("spec.md", b"# spec", ANNA, folder_id=grandchild.id)
    assert [f.name for f in await store.list_folders(ANNA)] == ["Projects"]
    assert [f.name for f in await store.list_folders(ANNA, root.id)] == ["Alpha"]
    assert len(await store.list_folders(ANNA, all_levels=True)) == 3
    assert await store.list_folders(BRUNO, all_levels=True) == []
    with pytest.raises(ValueError, match="into itself"):
        await store.move_folder(root.id, grandchild.id, ANNA)
    moved = await store.move_folder(grandchild.id, None, ANNA)
    assert moved.parent_id is None
    await store.move_folder(grandchild.id, child.id, ANNA)
    renamed = await store.rename_folder(child.id, "Beta", ANNA)
    assert renamed.name == "Beta"
    with pytest.raises(FolderNotEmptyError):
        await store.delete_folder(root.id, ANNA)
    with pytest.raises(FileAccessError):
        await store.delete_folder(root.id, BRUNO, recursive=True)
    counts = await store.delete_folder(root.id, ANNA, recursive=True)
    assert (counts.folders, counts.files) == (3, 1)
    assert counts.to_wire() == {"folders": 3, "files": 1}
    assert await store.list(ANNA) == [] and await store.list_folders(ANNA, all_levels=True) == []
