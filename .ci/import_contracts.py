"""The architecture nyla's imports must keep, checked by import-linter (run by ``make lint``).

The contracts are built from the tree, so a new plugin or kernel module is covered the moment
it exists:

1. plugins import only ``nyla.sdk`` (and ``nyla.testing`` in their tests) and their own
   third-party SDKs — never the top-level ``nyla`` package nor a kernel module; hosts import
   only the faces: ``nyla``, ``nyla.host``, ``nyla.sdk`` and ``nyla.testing``;
2. no plugin imports another plugin;
3. ``nyla.models`` depends on nothing else in nyla;
4. the kernel never imports a plugin.

Import-linter cannot forbid ``nyla`` without forbidding ``nyla.sdk`` below it, and plugin
*tests* are not packages it can see, so rule 1's plugin part is checked here on the syntax
tree of every plugin source and test file. A plugin test that builds a kernel, a connection
service or opens the test database itself (in a worker process, with an injected transport or
sleep) does it through ``nyla.testing`` (``plugin_kernel``, ``connection_service``,
``open_database``, ``ai_service``), never through the top-level ``nyla`` or ``nyla.host``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "core" / "src" / "nyla"
#: the faces below ``nyla`` (a plugin's source may import only ``sdk``, its tests ``testing``
#: too; ``host`` is for hosts)
PUBLIC = {"sdk", "testing", "host"}


def plugin_packages() -> list[str]:
    """The import names of every plugin distribution under plugins/ and every host under
    hosts/ (a host reaches the kernel through the faces: ``nyla``, ``nyla.host``)."""
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
name = Plugins and hosts import no kernel internal (only nyla, nyla.host, nyla.sdk, nyla.testing)
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


def imported(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for each absolute import in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
    return found


def allowed(module: str, *, host: bool, testing: bool) -> bool:
    """Whether a plugin or host file may import ``module``: anything outside ``nyla``,
    ``nyla.sdk`` and below, ``nyla.testing`` and below where ``testing``, the top-level
    package and ``nyla.host`` in a host."""
    parts = module.split(".")
    if parts[0] != "nyla":
        return True
    if len(parts) == 1:
        return host
    return parts[1] == "sdk" or (testing and parts[1] == "testing") or (host and parts[1] == "host")


def face_imports() -> list[str]:
    """``file:line: module`` for each import past the face a file may use: a plugin's source
    ``nyla.sdk``, its tests ``nyla.sdk`` and ``nyla.testing``, a host's tests also ``nyla`` and
    ``nyla.host``."""
    files = [
        *((p, False, False) for p in ROOT.glob("plugins/*/*/src/**/*.py")),
        *((p, False, True) for p in ROOT.glob("plugins/*/*/tests/**/*.py")),
        *((p, True, True) for p in ROOT.glob("hosts/*/tests/**/*.py")),
    ]
    bad = []
    for path, host, testing in sorted(files):
        name = str(path.relative_to(ROOT))
        for line, module in imported(path):
            if not allowed(module, host=host, testing=testing):
                bad.append(f"{name}:{line}: imports {module}")
    return bad


def main() -> int:
    """Run import-linter on the generated contracts, then check each file's face."""
    with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as handle:
        handle.write(config(plugin_packages()))
    linter = Path(sys.executable).with_name("lint-imports")
    status = subprocess.call([str(linter), "--no-cache", handle.name], cwd=ROOT)
    Path(handle.name).unlink()
    bad = face_imports()
    for line in bad:
        print(f"{line} (plugins import only nyla.sdk, and nyla.testing in their tests)")
    return status or (1 if bad else 0)


if __name__ == "__main__":
    sys.exit(main())
