"""The stored snapshot of the catalog's node definitions agrees with the live action
signatures. After a deliberate change refresh it with
``.venv/bin/python -m nyla.actions.snapshot_cli --write core/tests/actions/catalog_snapshot.json``
and commit the new snapshot with the change (a workflow stored against the old definition
may need migrating: the diff shows what changed)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field

from nyla.actions.catalog import ActionCatalog
from nyla.actions.seed import AI, CONTEXT, SummarizeDocumentParams
from nyla.actions.snapshot import drift, snapshot_text
from nyla.actions.snapshot_cli import builtin_catalog

SNAPSHOT = Path(__file__).with_name("catalog_snapshot.json")
REFRESH = "python -m nyla.actions.snapshot_cli --write core/tests/actions/catalog_snapshot.json"


def test_the_snapshot_matches_the_live_signatures():
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    found = drift(stored, builtin_catalog().node_definitions())
    assert not found, f"the action catalog drifted: {found}; if intended, run {REFRESH}"
    assert SNAPSHOT.read_text(encoding="utf-8") == snapshot_text(builtin_catalog())


def test_a_changed_signature_is_drift():
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
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    live = ActionCatalog({"ai": changed, "context": CONTEXT}).node_definitions()
    assert drift(stored, live) == ["ai_summarizeDocument: parameters changed"]
    gone = ActionCatalog({"ai": AI}).node_definitions()
    assert drift(stored, gone) == [
        "context_extractContent: in the snapshot, no longer live",
        "context_neutralizeData: in the snapshot, no longer live",
    ]
    flipped = AI.model_copy(
        update={"actions": [a.model_copy(update={"writes": True}) for a in AI.actions]}
    )
    live = ActionCatalog({"ai": flipped, "context": CONTEXT}).node_definitions()
    assert drift(stored, live) == [
        "ai_process: writes changed",
        "ai_summarizeDocument: writes changed",
    ]
