"""Plugin discovery imports this toolbox in every nyla command: the MCP SDK (~28 MiB and
its HTTP stack) must load only when a server is added or called."""

from __future__ import annotations

import os
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


def test_nyla_help_without_the_plugin_cache_loads_no_mcp_store() -> None:
    # the first command after an install discovers the plugins and registers their commands:
    # ``nyla mcp ...`` must not bring its database store (and SQLAlchemy) with it
    code = (
        "import sys\n"
        "from nyla.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('nyla_toolbox_mcp', 'sqlalchemy'))))"
    )
    env = {**os.environ, "NYLA_PLUGIN_CACHE": "off"}
    env.pop("NYLA_PLUGINS", None)
    env.pop("NYLA_DISABLE_PLUGINS", None)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    loaded = out.stdout.strip().splitlines()[-1]
    assert "'nyla_toolbox_mcp.cli_oauth'" in loaded, out.stdout + out.stderr  # commands registered
    for heavy in ("sqlalchemy", "nyla_toolbox_mcp.servers", "nyla_toolbox_mcp.grants"):
        assert f"'{heavy}'" not in loaded, loaded
