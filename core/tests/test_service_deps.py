"""The make lint check that no service reaches a sibling through the kernel object
(.ci/service_deps.py): what it finds in a module's source, which modules it reads, and that the
tree passes it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "service_deps.py"


def _script():
    spec = importlib.util.spec_from_file_location("service_deps", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_of_the_kernel_are_found_typing_and_relative_ones_too():
    check = _script()
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from nyla.kernel import Kernel\n"
        "import nyla.kernel\n"
        "from nyla import kernel as k\n"
        "from ..kernel import Kernel as K\n"
        "from nyla.kernels_elsewhere import x\n"
        "from . import kernel_notes\n"
    )
    found = check.lookups(source, "nyla.walkers.service")
    assert found == [(line, "imports nyla.kernel") for line in (3, 4, 5, 6)]
    # in a package's __init__ one dot is the package itself, in a module its package
    assert check.lookups("from . import kernel\n", "nyla.walkers", is_package=True) == []
    assert check.lookups("from .. import kernel\n", "nyla.walkers", is_package=True) == [
        (1, "imports nyla.kernel")
    ]
    assert check.lookups("from . import kernel\n", "nyla.walkers.x") == []


def test_lookups_on_anything_named_kernel_are_found_and_other_names_are_not():
    check = _script()
    source = (
        "def f(kernel, ctx, host, self):\n"
        "    kernel.db\n"
        "    self._kernel.jobs.run()\n"
        "    ctx.kernel.files\n"
        "    getattr(kernel, 'ai')\n"
        "    host.db\n"
        "    self.kernels.db\n"
        "    return ctx.kernel\n"
    )
    assert check.lookups(source, "nyla.files.store") == [
        (2, "kernel.db"),
        (3, "self._kernel.jobs"),
        (4, "ctx.kernel.files"),
        (5, "getattr(kernel, 'ai')"),
    ]


def test_cli_and_demo_modules_are_not_read_and_service_modules_are():
    check = _script()
    read = dict(check.modules())
    assert "nyla.walkers.service" in read and "nyla.connections.service" in read
    assert not {"nyla.walkers.cli", "nyla.walkers.demo", "nyla.knowledge.reindex_cli"} & set(read)
    assert all(name.split(".")[1] in check.SERVICE_ROOMS for name in read)


def test_the_tree_passes_the_check():
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
