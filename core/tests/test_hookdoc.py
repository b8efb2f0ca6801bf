"""docs/hooks.md holds the reference generated from nyla/hookspecs.py, and every hookspec
says what pytest's hookspecs say: arguments, return, firstresult or not, sync or async, when
it is called, what happens to a bad answer."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from nyla import hookdoc, hookspecs

DOC = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"
SECTIONS = ("Arguments:", "Returns:", "Results:", "Sync or async:", "Called:", "Bad answers:")


def test_docs_hooks_md_is_the_generated_reference() -> None:
    assert hookdoc.current(DOC.read_text(encoding="utf-8")) == hookdoc.block(), (
        "docs/hooks.md differs from nyla/hookspecs.py: run `python -m nyla.hookdoc --write`"
    )


def test_every_hook_of_the_plugin_manager_is_in_the_reference() -> None:
    import pluggy

    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    declared = {name for name in vars(pm.hook) if name.startswith("nyla_")}
    assert declared == set(hookdoc.hook_names())
    for name in declared:
        assert f"### `{name}(" in hookdoc.render()


@pytest.mark.parametrize("name", hookdoc.hook_names())
def test_each_hookspec_documents_the_whole_contract(name: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""
    missing = [s for s in SECTIONS if s not in doc]
    assert not missing, f"{name} does not document {', '.join(missing)}"
    assert "{rules}" not in doc
