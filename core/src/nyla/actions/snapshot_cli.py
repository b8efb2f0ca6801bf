"""Refresh or check the action catalog's snapshot of node definitions.

``python -m nyla.actions.snapshot_cli --write core/tests/actions/catalog_snapshot.json``
refreshes it from the methods of the kernel and of every installed plugin after a deliberate
signature change; without ``--write`` it prints the drift and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nyla.actions.catalog import ActionCatalog
from nyla.actions.snapshot import drift, of_plugins, snapshot_nodes, snapshot_text


def installed() -> tuple[ActionCatalog, Any]:
    """The catalog of the kernel's methods and every installed plugin's (as ``nyla actions
    list`` sees them), and the plugin host it came from."""
    from nyla.plugins import PluginHost

    host = PluginHost.discover(builtins=True, strict=False)
    return ActionCatalog(host.methods), host


def check(stored: list[dict[str, Any]]) -> list[str]:
    """The drift between ``stored`` and the installed catalog: every installed plugin's
    methods are compared; stored nodes of a plugin not installed here are left out."""
    catalog, host = installed()
    loaded = [name for name, record in host.records.items() if record.status == "ok"]
    owner = lambda method: host.owner_of("methods", method)  # noqa: E731
    return drift(of_plugins(stored, loaded), snapshot_nodes(catalog, owner))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the snapshot file")
    parser.add_argument("--write", action="store_true", help="refresh the snapshot")
    args = parser.parse_args(argv)
    if args.write:
        catalog, host = installed()
        text = snapshot_text(catalog, lambda method: host.owner_of("methods", method))
        args.path.write_text(text, encoding="utf-8")
        print(f"wrote {len(catalog.node_definitions())} node definitions to {args.path}")
        return 0
    found = check(json.loads(args.path.read_text(encoding="utf-8")))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
