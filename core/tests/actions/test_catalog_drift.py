"""The stored snapshot of the catalog's node definitions agrees with the live action
signatures of the kernel and of every installed plugin. After a deliberate change refresh it
with ``.venv/bin/python -m nyla.actions.snapshot_cli --write core/tests/actions/catalog_snapshot.json``
and commit the new snapshot with the change (a workflow stored against the old definition
may need migrating: the diff shows what changed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import Field

from nyla.actions.catalog import ActionCatalog
from nyla.actions.seed import AI, CONTEXT, SummarizeDocumentParams
from nyla.actions.snapshot import drift, of_plugins, snapshot_nodes, snapshot_text
from nyla.actions.snapshot_cli import check, installed, main

SNAPSHOT = Path(__file__).with_name("catalog_snapshot.json")
REFRESH = "python -m nyla.actions.snapshot_cli --write core/tests/actions/catalog_snapshot.json"


def stored() -> list[dict]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def kernel_owner(method: str) -> str:
    return "nyla.methods"


def test_the_snapshot_matches_every_installed_plugins_signatures():
    found = check(stored())
    assert not found, f"the action catalog drifted: {found}; if intended, run {REFRESH}"
    catalog, host = installed()
    plugins = {node["plugin"] for node in stored()}
    if plugins <= {n for n, r in host.records.items() if r.status == "ok"}:  # all installed
        owner = lambda method: host.owner_of("methods", method)  # noqa: E731
        assert SNAPSHOT.read_text(encoding="utf-8") == snapshot_text(catalog, owner)
    assert main([str(SNAPSHOT)]) == 0


def test_the_snapshot_holds_the_trustee_actions():
    pytest.importorskip("nyla_toolbox_trustee")
    by_tool = {node["tool"]: node for node in stored()}
    extract = by_tool["trustee_extractFromFiles"]
    assert extract["plugin"] == "trustee-toolbox" and extract["writes"] is True
    assert extract["references"]["fileIds"] == {"kind": "file", "many": True}
    assert {n["plugin"] for n in stored() if n["method"] in ("ai", "context")} == {"nyla.methods"}


def test_a_changed_plugin_signature_is_drift():
    pytest.importorskip("nyla_toolbox_trustee")
    catalog, host = installed()
    trustee = catalog.get("trustee", "extractFromFiles")
    assert trustee is not None
    method, action = trustee

    class Wider(action.params):  # type: ignore[name-defined,misc]
        currency: str = Field("CHF", description="The bookings' currency.")

    changed = method.model_copy(update={"actions": [action.model_copy(update={"params": Wider})]})
    methods = {m.name: m for m in catalog.methods()} | {"trustee": changed}
    owner = lambda name: host.owner_of("methods", name)  # noqa: E731
    live = snapshot_nodes(ActionCatalog(methods), owner)
    assert drift(stored(), live) == ["trustee_extractFromFiles: parameters changed"]
    without = {k: v for k, v in methods.items() if k != "trustee"}
    assert drift(stored(), snapshot_nodes(ActionCatalog(without), owner)) == [
        "trustee_extractFromFiles: in the snapshot, no longer live"
    ]
    # where the trustee plugin is not installed, its nodes are left out of the check
    kernel_only = of_plugins(stored(), ["nyla.methods"])
    assert drift(kernel_only, snapshot_nodes(ActionCatalog(without), owner)) == []


def test_a_changed_kernel_signature_is_drift():
    class Wider(SummarizeDocumentParams):
        language: str = Field("en", description="The summary's language.")

    changed = AI.model_copy(
        update={
            "actions": [
                a.model_copy(update={"params": Wider}) if a.name == "summarizeDocument" else a
                for a in AI.actions
            ]
        }
    )
    kernel = of_plugins(stored(), ["nyla.methods"])
    live = snapshot_nodes(ActionCatalog({"ai": changed, "context": CONTEXT}), kernel_owner)
    assert drift(kernel, live) == ["ai_summarizeDocument: parameters changed"]
    gone = snapshot_nodes(ActionCatalog({"ai": AI}), kernel_owner)
    assert drift(kernel, gone) == [
        "context_extractContent: in the snapshot, no longer live",
        "context_neutralizeData: in the snapshot, no longer live",
    ]
    flipped = AI.model_copy(
        update={"actions": [a.model_copy(update={"writes": True}) for a in AI.actions]}
    )
    live = snapshot_nodes(ActionCatalog({"ai": flipped, "context": CONTEXT}), kernel_owner)
    assert drift(kernel, live) == [
        "ai_process: writes changed",
        "ai_summarizeDocument: writes changed",
    ]
    moved = snapshot_nodes(ActionCatalog({"ai": AI, "context": CONTEXT}), lambda m: "other")
    assert drift(kernel, moved)[0] == "ai_process: plugin changed"


def test_the_check_fails_on_a_stored_node_that_no_longer_fits():
    pytest.importorskip("nyla_toolbox_trustee")
    edited = stored()
    for node in edited:
        if node["tool"] == "trustee_extractFromFiles":
            node["parameters"]["required"] = ["fileIds", "featureInstanceId"]
    assert check(edited) == ["trustee_extractFromFiles: parameters changed"]
