"""What a command imports is its start-up time: heavy libraries wait for their first real
use, and with the plugin cache `nyla --help` and `nyla plugins list` import no plugin."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


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


PROBE = (
    "import sys\n"
    "from nyla.cli import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "except SystemExit:\n"
    "    pass\n"
    "heavy = ('sqlalchemy', 'pydantic', 'stevedore', 'nyla.kernel', 'nyla.plugins')\n"
    "print('LOADED', sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
)


def _loaded(args: list[str], env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    lines = [line for line in out.stderr.splitlines() if line.startswith("LOADED ")]
    assert lines, out.stdout + out.stderr
    return lines[-1].removeprefix("LOADED ")


@pytest.mark.parametrize("command", ["plugins", "ai", "db", "feature", "eval", "worker"])
def test_a_subcommand_help_loads_no_database_models_or_plugins(command: str):
    # nyla.plugins (light) answers whether NYLA_STRICT_PLUGINS applies to the command; in
    # strict mode (CI sets it) every command discovers the plugins first, by design
    env = {k: v for k, v in os.environ.items() if k != "NYLA_STRICT_PLUGINS"}
    assert _loaded([command, "--help"], env) in ("[]", "['nyla.plugins']")


def test_with_the_plugin_cache_help_and_listing_load_no_plugin_machinery(tmp_path):
    from importlib import metadata

    from nyla.plugins import ENTRY_POINT_GROUPS

    installed = {ep.name for g in ENTRY_POINT_GROUPS for ep in metadata.entry_points(group=g)}
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path),
        "NYLA_PLUGIN_CACHE": "on",
        # the built-ins only: a broken plugin elsewhere in the environment is never cached
        "NYLA_DISABLE_PLUGINS": ",".join(sorted(installed)),
    }
    env.pop("NYLA_PLUGINS", None)
    assert "stevedore" in _loaded(["plugins", "list", "--json"], env)  # fills the cache
    assert _loaded(["plugins", "list", "--json"], env) == "[]"
    assert _loaded(["--help"], env) == "[]"


def test_without_the_plugin_cache_help_imports_no_database_layer():
    # the first command after an install imports every plugin to list their commands: a
    # plugin's command must import its storage when it runs, not when it is registered
    env = {**os.environ, "NYLA_PLUGIN_CACHE": "off"}
    for name in ("NYLA_PLUGINS", "NYLA_DISABLE_PLUGINS", "NYLA_STRICT_PLUGINS"):
        env.pop(name, None)
    loaded = _loaded(["--help"], env)
    assert "nyla.plugins" in loaded and "sqlalchemy" not in loaded, loaded
