"""The catalog's node definitions as a stored snapshot, and the drift between a snapshot and
the live action signatures (the drift test in ``core/tests/actions`` reads it; the command
that refreshes it is :mod:`nyla.actions.snapshot_cli`).

Each stored node names the plugin that contributes its method (``plugin``), so the snapshot
covers every installed plugin's actions — the kernel's own and each plugin's — and a check
can leave out the nodes of a plugin that is not installed where it runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from nyla.actions.catalog import ActionCatalog

#: the plugin a method belongs to (``None``: unknown)
Owner = Callable[[str], str | None]


def snapshot_nodes(catalog: ActionCatalog, owner: Owner) -> list[dict[str, Any]]:
    """The node definitions, each with the ``plugin`` its method comes from."""
    return [
        {**node, "plugin": owner(node["method"]) or "unknown"}
        for node in catalog.node_definitions()
    ]


def snapshot_text(catalog: ActionCatalog, owner: Owner) -> str:
    """The snapshot file's text: the nodes, keys sorted, one trailing newline."""
    return json.dumps(snapshot_nodes(catalog, owner), indent=2, sort_keys=True) + "\n"


def of_plugins(stored: list[dict[str, Any]], plugins: Iterable[str]) -> list[dict[str, Any]]:
    """The stored nodes of ``plugins`` (those installed where the check runs)."""
    wanted = set(plugins)
    return [node for node in stored if node.get("plugin") in wanted]


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
