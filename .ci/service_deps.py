"""No service reaches a sibling through the kernel object, checked by ``make lint``.

Each service is built by ``nyla.kernel`` with the sibling services (or the narrow ports) it
uses, passed in; a service that looked a sibling up on the kernel (``self._kernel.knowledge``,
``ctx.kernel.files``) would hide that arrow from the import checks. So every module of the
service rooms (``SERVICE_ROOMS``) except the CLI and demo modules, which drive the kernel, is
read with :mod:`ast` and fails when it

- imports ``nyla.kernel`` (under ``if TYPE_CHECKING:`` too), or
- reads an attribute of something named ``kernel`` / ``_kernel`` (a name, or an attribute of
  that name: ``kernel.db``, ``self._kernel.jobs``, ``ctx.kernel.files``, ``getattr(kernel,
  ...)``).

``ALLOWED`` names the modules of other rooms that still do it; the list only shrinks: an entry
that no longer needs to be there fails the check too. ``--count`` prints the lookups per
module (the measure of issue 31) without failing.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "core" / "src"
SERVICE_ROOMS = (
    "actions",
    "agent",
    "ai",
    "connections",
    "features",
    "files",
    "jobs",
    "knowledge",
    "tools",
    "walkers",
)
KERNEL_NAMES = {"kernel", "_kernel"}

#: module -> why it still reaches the kernel object; remove an entry when its module is fixed
ALLOWED: dict[str, str] = {}


def is_cli(path: Path) -> bool:
    """CLI and demo modules drive the kernel (``cli.py``, ``demo.py``, ``reindex_cli.py``)."""
    stem = path.stem
    return stem in ("cli", "demo") or stem.endswith(("_cli", "_demo"))


def modules() -> Iterator[tuple[str, Path]]:
    """``(module name, path)`` of every checked module, sorted."""
    for room in SERVICE_ROOMS:
        for path in sorted((SRC / "nyla" / room).rglob("*.py")):
            if not is_cli(path):
                parts = list(path.relative_to(SRC).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                yield ".".join(parts), path


def _named_kernel(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in KERNEL_NAMES
    return isinstance(node, ast.Attribute) and node.attr in KERNEL_NAMES


def _imports_kernel(node: ast.AST, module: str, is_package: bool) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "nyla.kernel" or a.name.startswith("nyla.kernel.") for a in node.names)
    if not isinstance(node, ast.ImportFrom):
        return False
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        anchor = parts[: len(parts) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, *([base] if base else [])])
    if base == "nyla.kernel" or base.startswith("nyla.kernel."):
        return True
    return base == "nyla" and any(a.name == "kernel" for a in node.names)


def _looks_up(node: ast.AST) -> bool:
    """``kernel.x`` / ``self._kernel.x``, or ``getattr(kernel, ...)`` / ``hasattr(...)``."""
    if isinstance(node, ast.Attribute):
        return _named_kernel(node.value)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and bool(node.args)
        and _named_kernel(node.args[0])
    )


def lookups(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """``(line, what)`` for each import of the kernel and each lookup on a kernel in the
    source of ``module``, in line order."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if _imports_kernel(node, module, is_package):
            found.append((node.lineno, "imports nyla.kernel"))  # type: ignore[attr-defined]
        elif _looks_up(node):
            found.append((node.lineno, ast.unparse(node)))  # type: ignore[attr-defined]
    return sorted(found)


def findings(module: str, path: Path) -> list[str]:
    """``path:line: what`` for each import of the kernel and each lookup on a kernel."""
    name = path.relative_to(ROOT).as_posix()
    source = path.read_text(encoding="utf-8")
    is_package = path.name == "__init__.py"
    return [
        f"{name}:{line}: {what}" for line, what in lookups(source, module, is_package=is_package)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", action="store_true", help="print lookups per module only")
    args = parser.parse_args()
    per_module = {module: findings(module, path) for module, path in modules()}
    if args.count:
        total = 0
        for module, found in per_module.items():
            if found:
                total += len(found)
                print(f"{len(found):4d}  {module}")
        print(f"{total} kernel lookups/imports in {sum(map(bool, per_module.values()))} modules")
        return 0
    problems = []
    for module, found in per_module.items():
        if module in ALLOWED:
            if not found:
                problems.append(f"{module} no longer reaches the kernel: drop it from ALLOWED")
        else:
            problems.extend(found)
    stale = sorted(set(ALLOWED) - set(per_module))
    problems.extend(f"{m} is gone: drop it from ALLOWED in .ci/service_deps.py" for m in stale)
    print(f"allowed to reach the kernel still (ALLOWED, only shrinks): {len(ALLOWED) or 'none'}")
    for module, why in sorted(ALLOWED.items()):
        print(f"  {module}: {why}")
    for line in problems:
        print(line)
    checked = len(per_module)
    print(
        f"service modules reaching a sibling through the kernel: {len(problems)} ({checked} read)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
