"""Refresh or check the action catalog's snapshot of node definitions.

``python -m nyla.actions.snapshot_cli --write core/tests/actions/catalog_snapshot.json``
refreshes it from the kernel's own methods after a deliberate signature change; without
``--write`` it prints the drift and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nyla.actions.catalog import ActionCatalog
from nyla.actions.snapshot import drift, snapshot_text


def builtin_catalog() -> ActionCatalog:
    """The catalog of the kernel's own methods only (independent of installed plugins)."""
    from nyla.plugins import PluginHost

    return ActionCatalog(PluginHost.from_plugins([], builtins=True).methods)


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
