"""``docs/writing-a-plugin.md`` documents the plugin face whole: every public name of
``nyla.sdk``, of its submodules that declare ``__all__`` and of ``nyla.testing`` has its own
line there (``- `name` — what it is``), and the page lists no name the face lacks."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import nyla.sdk

DOC = Path(__file__).resolve().parents[3] / "docs" / "writing-a-plugin.md"
SECTION = "## The face: what `nyla.sdk` offers"
#: the submodules a plugin imports on its own
SUBMODULES = (
    "actions",
    "connectors",
    "database",
    "documents",
    "egress",
    "run_toolboxes",
    "text",
    "toolboxes",
    "task_toolbox",
)


def documented() -> list[str]:
    """The names of the face section's one-line entries, in order."""
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC.name} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- `(\w+)` — \S", section, flags=re.MULTILINE)


def sdk_all() -> list[str]:
    """``nyla.sdk.__all__`` read from the package's source (what it promises to export)."""
    tree = ast.parse(Path(str(nyla.sdk.__file__)).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            return list(ast.literal_eval(node.value))
    raise AssertionError("nyla.sdk has no __all__")


@pytest.mark.parametrize(
    "module", ["nyla.sdk", *(f"nyla.sdk.{m}" for m in SUBMODULES), "nyla.testing"]
)
def test_every_name_of_the_face_has_a_line(module: str) -> None:
    names = sdk_all() if module == "nyla.sdk" else importlib.import_module(module).__all__
    missing = sorted(set(names) - set(documented()))
    assert not missing, f"{DOC.name} has no `- `name` — ...` line for {module}: {missing}"


def test_the_page_lists_only_names_of_the_face_once_each() -> None:
    face = set(sdk_all()) | set(importlib.import_module("nyla.testing").__all__)
    for sub in SUBMODULES:
        face |= set(importlib.import_module(f"nyla.sdk.{sub}").__all__)
    lines = documented()
    assert sorted(set(lines) - face) == [], "lines for names the face does not export"
    twice = sorted({n for n in lines if lines.count(n) > 1})
    assert twice == [], f"names with more than one line: {twice}"
