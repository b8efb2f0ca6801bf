"""Size limits of the kernel, the hosts and the plugins, checked by ``make lint``.

A module holds one idea and a long function is a list of named steps, so:

- no module over 450 lines (``MAX_MODULE_LINES``),
- no function or method over 80 lines (``MAX_FUNCTION_LINES``, from ``def`` to its last
  line, docstring included),

in ``core/src``, ``hosts/`` (sources and tests) and every plugin's source
(``plugins/<kind>/<name>/src``). Sample data and generated tables may be
longer: list them in ``EXEMPT`` with the reason. Prints each excess as ``path:line: ...`` and
exits 1 when there is one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
#: glob patterns (relative to the repository) of the folders checked
CHECKED = ("core/src", "hosts", "plugins/*/*/src")
#: path (relative to the repository) -> why it may exceed the limits; keep it short
EXEMPT: dict[str, str] = {}


def excesses(path: Path) -> list[str]:
    """``path:line: what`` for each limit the file exceeds."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT).as_posix()
    found = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{name}:1: module has {lines} lines (limit {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text, filename=name)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(
                    f"{name}:{node.lineno}: {node.name}() has {length} lines "
                    f"(limit {MAX_FUNCTION_LINES})"
                )
    return found


def checked_files() -> list[Path]:
    """Every Python file below the checked folders (virtual environments left out)."""
    folders = [folder for pattern in CHECKED for folder in ROOT.glob(pattern)]
    paths = {path for folder in folders for path in folder.rglob("*.py")}
    return sorted(p for p in paths if ".venv" not in p.parts)


def main() -> int:
    """Check every Python file below the checked folders; 1 when any exceeds a limit."""
    problems = []
    for path in checked_files():
        name = path.relative_to(ROOT).as_posix()
        found = excesses(path)
        if name not in EXEMPT:
            problems.extend(found)
        elif not found:
            print(f"{name} is within the limits now: drop it from EXEMPT in .ci/sizes.py")
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} over the size limits (.ci/sizes.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
