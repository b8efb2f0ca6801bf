"""The architecture nyla's imports must keep, checked by import-linter (run by ``make lint``).

The contracts are built from the tree, so a new plugin or kernel module is covered the moment
it exists:

1. plugins import only ``nyla``, ``nyla.sdk`` and ``nyla.testing`` (and their own
   third-party SDKs) — never a kernel module directly;
2. no plugin imports another plugin;
3. ``nyla.models`` depends on nothing else in nyla;
4. the kernel never imports a plugin.

Plugin *tests* are not packages import-linter can see, so rule 1 is checked on them here too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "core" / "src" / "nyla"
PUBLIC = {"sdk", "testing"}
#: plugin test files allowed to reach kernel internals (none: nyla.testing.tables and the
#: top-level ``nyla`` names cover what integration tests need); keep it empty
TEST_DEBT: set[str] = set()


def plugin_packages() -> list[str]:
    """The import names of every plugin distribution under plugins/ and every host under
    hosts/ (a host is a plugin too: it reaches the kernel through ``nyla`` like any other)."""
    found = [*ROOT.glob("plugins/*/*/src/*/__init__.py"), *ROOT.glob("hosts/*/src/*/__init__.py")]
    return sorted(p.parent.name for p in found)


def kernel_children() -> list[str]:
    """Every module and package directly below ``nyla``."""
    names = {p.stem for p in KERNEL.glob("*.py") if p.stem != "__init__"}
    names |= {p.parent.name for p in KERNEL.glob("*/__init__.py")}
    return sorted(f"nyla.{n}" for n in names)


def config(plugins: list[str]) -> str:
    """The import-linter configuration (INI) for this tree."""
    internals = [m for m in kernel_children() if m.split(".")[1] not in PUBLIC]
    beside_models = [m for m in kernel_children() if m != "nyla.models"]

    def lines(items: list[str]) -> str:
        return "\n".join(f"    {i}" for i in items)

    return f"""[importlinter]
root_packages =
    nyla
{lines(plugins)}

[importlinter:contract:plugins-use-the-sdk]
name = Plugins import only nyla, nyla.sdk and nyla.testing
type = forbidden
source_modules =
{lines(plugins)}
forbidden_modules =
{lines(internals)}
allow_indirect_imports = True

[importlinter:contract:plugins-independent]
name = No plugin imports another plugin
type = independence
modules =
{lines(plugins)}

[importlinter:contract:models-at-the-bottom]
name = nyla.models depends on nothing else in nyla
type = forbidden
source_modules =
    nyla.models
forbidden_modules =
{lines(beside_models)}

[importlinter:contract:kernel-without-plugins]
name = The kernel never imports a plugin
type = forbidden
source_modules =
    nyla
forbidden_modules =
{lines(plugins)}
"""


def test_imports() -> list[str]:
    """``file: module`` for each import of a kernel internal in a plugin's tests."""
    bad = []
    tests = [*ROOT.glob("plugins/*/*/tests/**/*.py"), *ROOT.glob("hosts/*/tests/**/*.py")]
    for path in sorted(tests):
        if str(path.relative_to(ROOT)) in TEST_DEBT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            for module in modules:
                parts = module.split(".")
                if parts[0] == "nyla" and len(parts) > 1 and parts[1] not in PUBLIC:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports {module}")
    return bad


def main() -> int:
    """Run import-linter on the generated contracts, then check the plugins' tests."""
    with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as handle:
        handle.write(config(plugin_packages()))
    linter = Path(sys.executable).with_name("lint-imports")
    status = subprocess.call([str(linter), "--no-cache", handle.name], cwd=ROOT)
    Path(handle.name).unlink()
    bad = test_imports()
    for line in bad:
        print(f"{line} (plugins import only nyla, nyla.sdk and nyla.testing)")
    return status or (1 if bad else 0)


if __name__ == "__main__":
    sys.exit(main())
