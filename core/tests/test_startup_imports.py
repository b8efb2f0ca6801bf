"""`nyla --help` discovers every plugin; what that imports is the start-up time of each
command. Heavy libraries wait for their first real use."""

from __future__ import annotations

import subprocess
import sys


def test_plugin_discovery_does_not_import_the_http_stack():
    code = (
        "import sys\n"
        "from nyla.plugins import PluginHost\n"
        "host = PluginHost.discover(strict=False)\n"
        "assert host.toolboxes, 'no toolbox discovered'\n"
        "print(sorted(m for m in ('httpx', 'rich', 'sqlalchemy') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
