"""The catalog's node definitions as a stored snapshot, and the drift between a snapshot and
the live action signatures (the drift test in ``core/tests/actions`` reads it; the command
that refreshes it is :mod:`nyla.actions.snapshot_cli`)."""

from __future__ import annotations

import json
from typing import Any

from nyla.actions.catalog import ActionCatalog


def snapshot_text(catalog: ActionCatalog) -> str:
    """The snapshot file's text: the node definitions, keys sorted, one trailing newline."""
    return json.dumps(catalog.node_definitions(), indent=2, sort_keys=True) + "\n"


def drift(stored: list[dict[str, Any]], live: list[dict[str, Any]]) -> list[str]:
    """What differs between stored and live node definitions, one line per action (added,
    removed, or changed with the keys that changed); empty when they agree."""
    old = {node["tool"]: node for node in stored}
    new = {node["tool"]: node for node in live}
    out = [f"{tool}: new action, not in the snapshot" for tool in sorted(set(new) - set(old))]
    out += [f"{tool}: in the snapshot, no longer live" for tool in sorted(set(old) - set(new))]
    for tool in sorted(set(old) & set(new)):
        changed = sorted(
            k for k in old[tool].keys() | new[tool].keys() if old[tool].get(k) != new[tool].get(k)
        )
        if changed:
            out.append(f"{tool}: {', '.join(changed)} changed")
    return out
