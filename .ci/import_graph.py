"""The kernel's import graph, measured: rooms, arrows, circles, layering breaks, load per command.

Reads every module of ``core/src/nyla`` with :mod:`ast` (nothing is imported) and draws an
edge for each ``import`` of another ``nyla`` module: module-level and function-level imports
are *runtime* edges, imports under ``if TYPE_CHECKING:`` are *typing* edges, reported
separately. ``from nyla.x import y`` points at ``nyla.x.y`` when that is a module, else at
``nyla.x``. Only the named module counts, not the parent packages Python also runs: every
module would otherwise point at the top-level package.

- **rooms**: the top-level subpackages and modules of ``nyla`` (``nyla.agent``, ``nyla.db``,
  ...; the package's own ``__init__`` is the room ``nyla``);
- **arrows**: ordered pairs of different rooms with at least one import between them;
- **back up**: arrows from a lower layer to a higher one (``LAYERS`` below);
- **circles**: strongly connected components (Tarjan) of the module graph with more than one
  module, typing edges included, and again with runtime edges only; and of the room graph;
- **modules per command**: the ``nyla`` modules in ``sys.modules`` of a fresh interpreter that
  imported what the command's code path imports (``COMMANDS``), and the modules reachable from
  there over runtime edges (an upper bound: every lazy import taken).

CLI and demo modules (``cli.py``, ``demo.py``, ``*_cli.py``) inside a service folder are the
commands of what they drive, kept beside it: each folder's are a room of their own,
``<folder>.cli``, in the CLI layer (``hosts``), so their imports of the kernel and of
``nyla.commands`` run down, not back up.

Prints a report, or JSON with ``--json``; ``--check`` (run by ``make lint``) exits 1 on a
circle of modules or of rooms, and on an import back up a layer that ``ALLOWED_UP`` does not
name.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "core" / "src"
PACKAGE = "nyla"

#: the intended layering, bottom up; a room may import its own layer and the ones below
LAYERS: dict[str, tuple[str, ...]] = {
    "base": (
        "errors",
        "text",
        "linear_regex",
        "cpu",
        "identity",
        "http_core",
        "version",
        "config",
        "tracing",
    ),
    "models": ("models", "hookspecs"),
    "storage": ("db", "db_schema", "tables", "embedded", "dbcanary", "read_pool", "table_changes"),
    "services": (
        "access",
        "actions",
        "ai",
        "billing",
        "connections",
        "knowledge",
        "files",
        "jobs",
        "walkers",
        "features",
        "tools",
        "agent",
        "eval",
    ),
    "runtime": (
        "kernel",
        "plugins",
        "plugin_answers",
        "plugin_record",
        "plugin_cache",
        "plugin_schema",
        "checks",
    ),
    # the faces sit on the kernel: what plugins and library users import
    "faces": ("sdk", "host", "hookdoc", PACKAGE),
    "hosts": ("cli", "commands", "demo"),
    # the test kit drives everything below it, the CLI included (invoke_cli), like a test
    "tests": ("testing", "pytest_plugin"),
}
#: module imports that run back up and are let through ``--check`` for now, with why; an entry
#: goes when its import does (a stale entry fails the check too), none is added lightly
ALLOWED_UP: dict[tuple[str, str], str] = {}
LAYER_OF = {room: rank for rank, rooms in enumerate(LAYERS.values()) for room in rooms}
LAYER_NAMES = list(LAYERS)
#: the layer of the CLI and demo modules inside service folders (see :func:`room`)
CLI_LAYER = "hosts"

#: command -> the modules its code path imports (the command's module, and what its body
#: imports lazily: the kernel it builds, the models it fills)
COMMANDS: dict[str, tuple[str, ...]] = {
    "nyla run": (
        "nyla.cli",
        "nyla.agent.cli",
        "nyla.identity",
        "nyla.kernel",
        "nyla.models.agent",
    ),
    "nyla sync run": (
        "nyla.cli",
        "nyla.walkers.cli",
        "nyla.kernel",
        "nyla.knowledge.sources",
        "nyla.walkers.progress",
    ),
}


@dataclass
class Graph:
    """Modules of the package and their import edges (runtime and typing-only)."""

    modules: dict[str, Path]
    runtime: dict[str, set[str]] = field(default_factory=dict)
    typing: dict[str, set[str]] = field(default_factory=dict)

    def edges(self, with_typing: bool) -> dict[str, set[str]]:
        """Each module's targets: runtime edges, plus typing ones when asked."""
        out = {name: set(self.runtime.get(name, ())) for name in self.modules}
        if with_typing:
            for name, targets in self.typing.items():
                out[name] |= targets
        return out


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_cli(module: str) -> bool:
    """A CLI or demo module inside a folder of the package (``nyla.walkers.cli``)."""
    parts = module.split(".")
    return len(parts) > 2 and (parts[-1] in ("cli", "demo") or parts[-1].endswith("_cli"))


def room(module: str) -> str:
    """The top-level subpackage or module of ``module``; ``<folder>.cli`` for the CLI and
    demo modules of a folder."""
    parts = module.split(".")
    if is_cli(module):
        return f"{parts[1]}.cli"
    return parts[1] if len(parts) > 1 else PACKAGE


def layer(name: str) -> int | None:
    """The rank of a room's layer in ``LAYERS`` (``None``: the room is in none)."""
    if name.endswith(".cli"):
        return LAYER_NAMES.index(CLI_LAYER)
    return LAYER_OF.get(name)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(tree: ast.AST, typing_only: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement under ``tree`` and whether it is under ``if TYPE_CHECKING``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, typing_only
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), typing_only)
        else:
            yield from _imports(node, typing_only)


def _targets(node: ast.stmt, module: str, is_package: bool, known: set[str]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    assert isinstance(node, ast.ImportFrom)
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, *([base] if base else [])])
    for alias in node.names:
        candidate = f"{base}.{alias.name}"
        yield candidate if candidate in known else base


def build() -> Graph:
    """Parse every module of the package into a :class:`Graph`."""
    modules = {module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}
    known = set(modules)
    graph = Graph(modules)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, typing_only in _imports(tree):
            for target in _targets(node, name, path.name == "__init__.py", known):
                while target and target not in known:  # `import nyla.x.y` of a name in x
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges = graph.typing if typing_only else graph.runtime
                    edges.setdefault(name, set()).add(target)
    for name in modules:  # an edge both typing and runtime is a runtime edge
        graph.typing[name] = graph.typing.get(name, set()) - graph.runtime.get(name, set())
    return graph


def tarjan(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of ``edges`` (iterative Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return sorted(components, key=lambda c: (-len(c), c))


def arrows(graph: Graph) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    """(from room, to room) -> the imports behind it, as (module, target, kind)."""
    out: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for kind, edges in (("runtime", graph.runtime), ("typing", graph.typing)):
        for src, targets in edges.items():
            for dst in targets:
                if room(src) != room(dst):
                    out.setdefault((room(src), room(dst)), []).append((src, dst, kind))
    return out


def back_up(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The arrows that run from a lower layer to a higher one (unknown rooms: reported)."""

    def rank(name: str, unknown: int) -> int:
        found = layer(name)
        return unknown if found is None else found

    return [(a, b) for a, b in pairs if rank(a, -1) < rank(b, len(LAYERS))]


def _layer_name(name: str) -> str:
    found = layer(name)
    return "?" if found is None else LAYER_NAMES[found]


def loaded(entry: tuple[str, ...]) -> int:
    """``nyla`` modules a fresh interpreter holds after importing ``entry``."""
    code = (
        "import importlib, sys\n"
        f"for m in {list(entry)!r}: importlib.import_module(m)\n"
        f"print(len([m for m in sys.modules if m == {PACKAGE!r} or m.startswith('nyla.')]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    return int(out.stdout.strip().splitlines()[-1])


def reachable(edges: dict[str, set[str]], entry: tuple[str, ...]) -> int:
    seen: set[str] = set()
    todo = [m for m in entry if m in edges]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(edges.get(module, ()))
    return len(seen)


def measure(with_commands: bool = True) -> dict[str, object]:
    """Everything the report shows, as plain data."""
    graph = build()
    behind = arrows(graph)
    pairs = sorted(behind)
    runtime_pairs = sorted(p for p, why in behind.items() if any(k == "runtime" for *_, k in why))
    up = back_up(pairs)
    circles = [c for c in tarjan(graph.edges(with_typing=True)) if len(c) > 1]
    runtime_circles = [c for c in tarjan(graph.edges(with_typing=False)) if len(c) > 1]
    room_edges: dict[str, set[str]] = {room(m): set() for m in graph.modules}
    for a, b in pairs:
        room_edges[a].add(b)
    report: dict[str, object] = {
        "modules": len(graph.modules),
        "rooms": sorted({room(m) for m in graph.modules}),
        "unlayered_rooms": sorted({room(m) for m in graph.modules if layer(room(m)) is None}),
        "arrows": [f"{a} -> {b}" for a, b in pairs],
        "runtime_arrows": len(runtime_pairs),
        "back_up": {
            f"{a} ({_layer_name(a)}) -> {b} ({_layer_name(b)})": sorted(
                f"{src} -> {dst}{' [typing]' if kind == 'typing' else ''}"
                for src, dst, kind in behind[(a, b)]
            )
            for a, b in up
        },
        "circles": circles,
        "runtime_circles": runtime_circles,
        "room_circles": [c for c in tarjan(room_edges) if len(c) > 1],
    }
    if with_commands:
        runtime_edges = graph.edges(with_typing=False)
        report["commands"] = {
            name: {"loaded": loaded(entry), "reachable": reachable(runtime_edges, entry)}
            for name, entry in COMMANDS.items()
        }
    return report


def print_report(report: dict[str, object]) -> None:
    rooms = report["rooms"]
    arrow_list = report["arrows"]
    up = report["back_up"]
    circles = report["circles"]
    runtime_circles = report["runtime_circles"]
    assert isinstance(rooms, list) and isinstance(arrow_list, list) and isinstance(up, dict)
    assert isinstance(circles, list) and isinstance(runtime_circles, list)
    print(f"modules: {report['modules']}  rooms: {len(rooms)}  arrows: {len(arrow_list)}")
    print(f"  ({report['runtime_arrows']} with a runtime import)")
    if report["unlayered_rooms"]:
        print(f"rooms outside LAYERS: {', '.join(report['unlayered_rooms'])}")  # type: ignore[arg-type]
    print(f"\narrows back up: {len(up)}")
    for arrow, why in up.items():
        print(f"  {arrow}")
        for line in why:
            print(f"      {line}")
    sizes = ", ".join(str(len(c)) for c in circles) or "none"
    print(f"\ncircles (typing imports included): {len(circles)}  sizes: {sizes}")
    for circle in circles:
        print(f"  [{len(circle)}] {' '.join(circle)}")
    sizes = ", ".join(str(len(c)) for c in runtime_circles) or "none"
    print(f"circles (runtime imports only): {len(runtime_circles)}  sizes: {sizes}")
    room_circles = report["room_circles"]
    assert isinstance(room_circles, list)
    print(f"circles of rooms: {len(room_circles)}")
    for circle in room_circles:
        print(f"  [{len(circle)}] {' '.join(circle)}")
    commands = report.get("commands")
    if isinstance(commands, dict):
        print("\nnyla modules per command (loaded by its code path / reachable at most):")
        for name, numbers in commands.items():
            print(f"  {name}: {numbers['loaded']} / {numbers['reachable']}")


def check(report: dict[str, object]) -> int:
    """What ``make lint`` gates: 1 on a circle of modules or of rooms, or on an import running
    back up that ``ALLOWED_UP`` does not name (or an entry there no import needs any more)."""
    circles, room_circles, up = report["circles"], report["room_circles"], report["back_up"]
    assert isinstance(circles, list) and isinstance(room_circles, list) and isinstance(up, dict)
    for circle in circles:
        print(f"import circle ({len(circle)} modules): {' -> '.join(circle)}")
    for circle in room_circles:
        print(f"circle of rooms ({len(circle)}): {' -> '.join(circle)}")
    found = {
        tuple(line.removesuffix(" [typing]").split(" -> ")) for why in up.values() for line in why
    }
    unexplained = sorted(found - ALLOWED_UP.keys())
    stale = sorted(ALLOWED_UP.keys() - found)
    for src, dst in unexplained:
        print(f"import back up a layer: {src} -> {dst} (see LAYERS; docs/architecture.md)")
    for src, dst in stale:
        print(f"ALLOWED_UP names {src} -> {dst}, which no longer runs back up: remove the entry")
    print(f"import circles in core/src/nyla (typing imports included): {len(circles)}")
    print(f"circles of rooms: {len(room_circles)}")
    print(f"imports back up: {len(found)} ({len(found) - len(unexplained)} in ALLOWED_UP)")
    return 1 if circles or room_circles or unexplained or stale else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the measures as JSON")
    parser.add_argument("--no-commands", action="store_true", help="skip the per-command load")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on a circle or an import back up a layer (make lint)",
    )
    args = parser.parse_args()
    report = measure(with_commands=not (args.no_commands or args.check))
    if args.check:
        return check(report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
