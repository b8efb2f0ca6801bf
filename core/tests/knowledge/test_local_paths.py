"""The local files of ``nyla knowledge index`` are found as the walk goes, in the order of
sorting all their paths, with the same files left out as before (hidden entries, unsupported
types, links to directories), and a bulk load over them keeps no list of them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nyla.knowledge.extract import detect_kind
from nyla.knowledge.local_paths import count_paths, expand_paths, iter_paths


def sorted_listing(root: Path) -> list[Path]:
    """What the listing did before the walk: sort every path below ``root``, then filter."""
    out = []
    for child in sorted(root.rglob("*")):
        hidden = any(p.startswith(".") for p in child.relative_to(root).parts)
        if child.is_file() and not hidden and detect_kind(child.name) is not None:
            out.append(child)
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for rel in (
        "a.txt", "a/x.md", "a-b/y.txt", "a.b/z.txt", "B/upper.txt", "b.txt", "b/deep/er/c.csv",
        "img.png", "notes.bin", ".hidden.txt", ".git/config.txt", "c/.secret/k.txt",
        "d/e/f.json", "ä/ö.txt", "z10.txt", "z9.txt",
    ):  # fmt: skip
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    (root / "empty").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.txt").write_text("o")
    os.symlink(outside, root / "linked-dir")  # not followed (as before)
    os.symlink(outside / "o.txt", root / "linked.txt")  # a link to a file is a file
    return root


def test_same_files_in_the_same_order_as_sorting_every_path(tree: Path) -> None:
    walked = list(iter_paths([tree]))
    assert walked == sorted_listing(tree)
    assert [p.relative_to(tree).as_posix() for p in walked][:6] == [
        "B/upper.txt", "a/x.md", "a-b/y.txt", "a.b/z.txt", "a.txt", "b/deep/er/c.csv",
    ]  # fmt: skip
    assert tree / "linked.txt" in walked
    assert not any("linked-dir" in p.parts or ".git" in p.parts for p in walked)
    assert count_paths([tree]) == len(walked) == len(expand_paths([tree]))


def test_files_and_folders_given_together_and_a_missing_one(tree: Path) -> None:
    one = tree / "notes.bin"  # named explicitly: indexed whatever its type (as before)
    assert list(iter_paths([one, tree / "d"])) == [one, tree / "d/e/f.json"]
    with pytest.raises(FileNotFoundError, match="no such file"):
        count_paths([tree / "nope"])


def test_the_walk_holds_one_folder_at_a_time(tree: Path) -> None:
    walk = iter_paths([tree])
    first = next(walk)
    assert first == tree / "B/upper.txt"
    # a folder is read when the walk reaches it: a file written now to a later one is found
    (tree / "d/e/late.txt").write_text("late")
    assert tree / "d/e/late.txt" in list(walk)
