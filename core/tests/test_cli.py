"""The `nyla` command: fast help with no vendor SDK imported, and the inspector's JSON."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from nyla.cli import cli

VENDOR_SDKS = ("openai", "anthropic", "mistralai")


def _imported_after(args: list[str]) -> set[str]:
    code = (
        "import sys\n"
        "from nyla.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return set(result.stderr.split())


def test_help_discovers_plugins_but_imports_no_vendor_sdk():
    modules = _imported_after(["--help"])
    assert "click" in modules  # the probe itself works
    # --help lists the commands plugins add, so it discovers them (as `llm --help` does)
    assert "nyla_provider_openai" in modules
    assert not modules & set(VENDOR_SDKS)


def test_plugin_listing_imports_no_vendor_sdk():
    modules = _imported_after(["plugins", "list", "--json"])
    assert "nyla_provider_openai" in modules  # discovery did load the provider plugins
    assert not modules & set(VENDOR_SDKS)
    # listing plugins touches no storage: the database layer stays unimported (startup time)
    assert "sqlalchemy" not in modules


def test_plugins_list_json_is_valid_with_required_fields():
    result = CliRunner().invoke(cli, ["plugins", "list", "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert records, "the workspace installs plugins"
    for rec in records:
        assert {
            "name",
            "distribution",
            "version",
            "group",
            "status",
            "error",
            "contributes",
        } <= set(rec)
        assert rec["status"] in ("ok", "failed", "disabled")


def test_plugins_show_unknown_name_is_a_clear_error():
    result = CliRunner().invoke(cli, ["plugins", "show", "no-such-plugin"])
    assert result.exit_code != 0
    assert "no plugin named 'no-such-plugin'" in result.output


def test_plugins_check_is_clean_on_the_repo():
    result = CliRunner().invoke(cli, ["plugins", "check", "--json"])
    report = json.loads(result.output)
    assert report["problems"] == [], report["problems"]
    assert result.exit_code == 0


def test_catalog_commands_have_json():
    runner = CliRunner()
    for args in (
        ["models", "list", "--json"],
        ["toolboxes", "list", "--json"],
        ["tools", "list", "--json"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, (args, result.output)
        assert isinstance(json.loads(result.output), list)


def test_plugins_add_commands_through_the_hook(monkeypatch):
    import sys
    import types

    import click
    from stevedore import ExtensionManager

    import nyla

    module = types.ModuleType("fake_cli_plugin")

    @nyla.hookimpl
    def nyla_cli_commands(cli):
        @cli.command("hello-fixture")
        @click.argument("who")
        def hello(who):
            """Say hello."""
            click.echo(f"hello {who}")

    module.nyla_cli_commands = nyla_cli_commands

    class EP:
        name, value, group, module = "clip", "fake_cli_plugin", "nyla.features", "fake_cli_plugin"

        def load(self):
            return module

    monkeypatch.setitem(sys.modules, "fake_cli_plugin", module)
    from nyla.plugins import ENTRY_POINT_GROUPS

    for group in ENTRY_POINT_GROUPS:
        monkeypatch.setitem(ExtensionManager.ENTRY_POINT_CACHE, group, [])
    monkeypatch.setitem(ExtensionManager.ENTRY_POINT_CACHE, "nyla.features", [EP()])
    # plugins add their commands once per process: an earlier test in this worker may have
    monkeypatch.setattr(cli, "_plugin_commands_added", False, raising=False)
    try:
        result = CliRunner().invoke(cli, ["hello-fixture", "world"])
        assert result.exit_code == 0, result.output
        assert result.output.strip() == "hello world"
        unknown = CliRunner().invoke(cli, ["no-such-command"])
        assert unknown.exit_code != 0 and "No such command" in unknown.output
    finally:
        cli.commands.pop("hello-fixture", None)
