"""The catalog's node definitions as a stored snapshot, and the drift between a snapshot and
the live action signatures (the drift test in ``core/tests/actions`` reads it).

``python -m nyla.actions.snapshot --write core/tests/actions/catalog_snapshot.json`` refreshes
the snapshot from the kernel's own methods after a deliberate signature change; without
``--write`` it prints the drift and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nyla.actions.catalog import ActionCatalog


def builtin_catalog() -> ActionCatalog:
    """The catalog of the kernel's own methods only (independent of installed plugins)."""
    from nyla.plugins import PluginHost

    return ActionCatalog(PluginHost.from_plugins([], builtins=True).methods)


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the snapshot file")
    parser.add_argument("--write", action="store_true", help="refresh the snapshot")
    args = parser.parse_args(argv)
    catalog = builtin_catalog()
    if args.write:
        args.path.write_text(snapshot_text(catalog), encoding="utf-8")
        print(f"wrote {len(catalog.node_definitions())} node definitions to {args.path}")
        return 0
    found = drift(json.loads(args.path.read_text(encoding="utf-8")), catalog.node_definitions())
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
