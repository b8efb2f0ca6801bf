"""Plugin discovery imports this toolbox in every nyla command: the MCP SDK (~28 MiB and
its HTTP stack) must load only when a server is added or called."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_toolbox_and_its_commands_loads_no_mcp_sdk() -> None:
    code = (
        "import sys, nyla_toolbox_mcp, nyla_toolbox_mcp.cli, nyla_toolbox_mcp.tools\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"
