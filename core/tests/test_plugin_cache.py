"""The plugin cache: `nyla plugins list` and `nyla --help` from a snapshot while the
environment is unchanged, a fresh discovery as soon as anything it depends on changed."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from nyla import plugin_cache
from nyla.config import config_value
from nyla.plugin_cache import Snapshot
from nyla.plugin_record import PluginRecord
from nyla.plugins import ENTRY_POINT_GROUPS


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setenv("NYLA_PLUGIN_CACHE", "on")
    return home


def _snapshot(**record: object) -> Snapshot:
    rec = PluginRecord("fake", "nyla.toolboxes", "fake_mod", **record)  # type: ignore[arg-type]
    rec.hooks = ["nyla_toolboxes"]
    rec.contributes = {"toolboxes": ["fake"], "tools": ["fake_echo"]}
    rec._distribution = ("nyla-fake", "1.2.3")
    return Snapshot({"fake": rec}, commands=[("fake-cmd", "Do fake things.")])


def test_a_stored_snapshot_reads_back_equal(cache_home: Path):
    snapshot = _snapshot()
    plugin_cache.store(snapshot, providers=[])
    loaded = plugin_cache.load()
    assert loaded is not None
    assert [r.to_dict() for r in loaded.records.values()] == [
        r.to_dict() for r in snapshot.records.values()
    ]
    assert loaded.commands == [("fake-cmd", "Do fake things.")]
    assert plugin_cache.cache_file().is_relative_to(cache_home)


def test_a_corrupt_or_foreign_file_means_discovery(cache_home: Path):
    plugin_cache.store(_snapshot(), providers=[])
    path = plugin_cache.cache_file()
    for text in ("{not json", "[]", json.dumps({"format": 999}), json.dumps({"format": 1})):
        path.write_text(text)
        assert plugin_cache.load() is None, text
    plugin_cache.store(_snapshot(), providers=[])  # rewritten over the broken one
    assert plugin_cache.load() is not None


def test_an_unwritable_cache_directory_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setenv("NYLA_PLUGIN_CACHE", "on")
    plugin_cache.store(_snapshot(), providers=[])  # no error
    assert plugin_cache.load() is None


def test_switched_off_nothing_is_stored_or_read(cache_home: Path, monkeypatch: pytest.MonkeyPatch):
    plugin_cache.store(_snapshot(), providers=[])
    monkeypatch.setenv("NYLA_PLUGIN_CACHE", "off")
    assert plugin_cache.load() is None
    plugin_cache.cache_file().unlink()
    plugin_cache.store(_snapshot(), providers=[])
    assert not plugin_cache.cache_file().exists()


def test_a_plugin_that_failed_before_it_loaded_is_never_cached(cache_home: Path):
    plugin_cache.store(_snapshot(status="failed", error="import failed: boom"), providers=[])
    assert plugin_cache.load() is None
    warned = _snapshot(warnings=["nyla_toolboxes() returned None"])
    plugin_cache.store(warned, providers=[])
    assert plugin_cache.load() is None


def test_a_loaded_plugin_left_out_or_warned_about_is_cached_with_its_reason(cache_home: Path):
    for problem in (
        {"status": "failed", "error": "nyla_toolboxes() raised RuntimeError: no bwrap"},
        {"warnings": ["nyla_toolboxes() returned None"]},
    ):
        snapshot = _snapshot(**problem)
        snapshot.records["fake"].plugin = object()  # it loaded: its files are watched
        plugin_cache.store(snapshot, providers=[])
        loaded = plugin_cache.load()
        assert loaded is not None, problem
        assert loaded.problems() == snapshot.problems() != []
        plugin_cache.cache_file().unlink()


def test_a_program_installed_or_removed_on_path_invalidates(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    programs = tmp_path / "bin"
    programs.mkdir()
    monkeypatch.setenv("PATH", f"{programs}{os.pathsep}{os.environ.get('PATH', '')}")
    plugin_cache.store(_snapshot(), providers=[])
    assert plugin_cache.load() is not None
    (programs / "bwrap").write_text("#!/bin/sh\n")
    os.utime(programs, ns=(1, 1))  # a coarse clock must not hide the change
    assert plugin_cache.load() is None


def test_a_provider_whose_models_change_by_themselves_is_never_cached(cache_home: Path):
    class Live:
        models_cacheable = False

    plugin_cache.store(_snapshot(), providers=[Live()])
    assert plugin_cache.load() is None


def test_a_setting_a_plugin_read_invalidates(cache_home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("FAKE_CACHE_PROVIDER_API_KEY", raising=False)
    config_value("FAKE_CACHE_PROVIDER_API_KEY")  # as a provider's models() does
    plugin_cache.store(_snapshot(), providers=[])
    assert plugin_cache.load() is not None
    monkeypatch.setenv("FAKE_CACHE_PROVIDER_API_KEY", "sk-test")
    assert plugin_cache.load() is None
    assert "sk-test" not in plugin_cache.cache_file().read_text()


def test_a_nyla_variable_invalidates(cache_home: Path, monkeypatch: pytest.MonkeyPatch):
    plugin_cache.store(_snapshot(), providers=[])
    monkeypatch.setenv("NYLA_DISABLE_PLUGINS", "fake")
    assert plugin_cache.load() is None


def test_an_edited_source_file_invalidates(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    source = tmp_path / "src"
    source.mkdir()
    module_file = source / "fake_cache_editable.py"
    module_file.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(source))
    monkeypatch.delitem(sys.modules, "fake_cache_editable", raising=False)
    importlib.import_module("fake_cache_editable")
    plugin_cache.store(_snapshot(), providers=[])
    assert plugin_cache.load() is not None
    module_file.write_text("X = 2  # edited\n")
    assert plugin_cache.load() is None


# ---- the installed environment: a fake distribution in a temporary site directory ---------

PLUGIN = """
import os

with open(os.environ["FAKE_PLUGIN_MARKER"], "a") as marker:
    marker.write("imported\\n")

from nyla.hookspecs import hookimpl


@hookimpl
def nyla_cli_commands(cli):
    @cli.command("fake-cached")
    def fake_cached():
        \"\"\"A command from the fake cached plugin.\"\"\"
"""


#: a plugin that needs a program on PATH, as the code toolbox needs bwrap
PROBING_PLUGIN = """
import os
import shutil

with open(os.environ["FAKE_PLUGIN_MARKER"], "a") as marker:
    marker.write("imported\\n")

from nyla.hookspecs import hookimpl
from nyla.models.tools import Toolbox


@hookimpl
def nyla_toolboxes():
    if shutil.which("fake-sandbox-program") is None:
        raise RuntimeError("fake-sandbox-program is not on PATH")
    return [Toolbox(id="fake-probing", label="Fake probing", tools=[])]
"""


def _install(site: Path, module: str = "fake_cache_plugin", name: str = "fake-cached") -> None:
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[nyla.toolboxes]\n{name} = {module}\n")


def _fake_site_env(tmp_path: Path, site: Path, marker: Path) -> dict[str, str]:
    """The environment of a `nyla` with ``site`` on its path, its own cache directory, and
    only the fake plugins and the built-ins loading (the test's subject, quickly)."""
    installed = {ep.name for g in ENTRY_POINT_GROUPS for ep in metadata.entry_points(group=g)}
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "NYLA_PLUGIN_CACHE": "on",
        "FAKE_PLUGIN_MARKER": str(marker),
        "NYLA_DISABLE_PLUGINS": ",".join(sorted(installed)),
    }
    env.pop("NYLA_PLUGINS", None)
    return env


def _nyla(args: list[str], env: dict[str, str]) -> str:
    code = "import sys; from nyla.cli import main; main(sys.argv[1:])"
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_installing_and_removing_a_plugin_is_seen_at_once(tmp_path: Path):
    site = tmp_path / "site"
    (site / "fake_cache_plugin").mkdir(parents=True)
    (site / "fake_cache_plugin" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    marker = tmp_path / "imports.txt"
    env = _fake_site_env(tmp_path, site, marker)

    def names(listing: str) -> set[str]:
        return {r["name"] for r in json.loads(listing) if r["status"] == "ok"}

    _install(site)
    first = _nyla(["plugins", "list", "--json"], env)
    assert "fake-cached" in names(first)
    assert marker.read_text().count("imported") == 1
    assert _nyla(["plugins", "list", "--json"], env) == first  # from the cache
    assert "fake-cached" in _nyla(["--help"], env)
    assert marker.read_text().count("imported") == 1, "the cache hit imported the plugin"

    shutil.rmtree(site / "fake_cache_plugin-0.1.dist-info")  # uninstalled
    assert "fake-cached" not in names(_nyla(["plugins", "list", "--json"], env))
    assert "fake-cached" not in _nyla(["--help"], env)

    _install(site)  # installed again
    assert "fake-cached" in _nyla(["--help"], env)
    assert "fake-cached" in names(_nyla(["plugins", "list", "--json"], env))
    assert marker.read_text().count("imported") == 2


def test_help_from_the_cache_lists_the_cached_plugin_commands_and_any_added_in_process(
    cache_home: Path,
):
    import click
    from click.testing import CliRunner

    from nyla.cli import LazyGroup

    plugin_cache.store(_snapshot(), providers=[])
    group = LazyGroup(name="nyla")
    group.add_command(click.Command("host-cmd", help="From the embedding app."))
    result = CliRunner().invoke(group, ["--help"])
    assert result.exit_code == 0, result.output
    assert "fake-cmd" in result.output and "Do fake things." in result.output
    assert "host-cmd" in result.output
    assert not getattr(group, "_plugin_commands_added", False), "the cache hit discovered"


def test_a_plugin_left_out_for_a_missing_program_is_cached_until_the_program_comes(
    tmp_path: Path,
):
    site, programs = tmp_path / "site", tmp_path / "bin"
    (site / "fake_probing_plugin").mkdir(parents=True)
    (site / "fake_probing_plugin" / "__init__.py").write_text(PROBING_PLUGIN)
    programs.mkdir()
    _install(site, "fake_probing_plugin", "fake-probing")
    marker = tmp_path / "imports.txt"
    env = _fake_site_env(tmp_path, site, marker)
    env["PATH"] = f"{programs}{os.pathsep}{env.get('PATH', '')}"
    env.pop("NYLA_STRICT_PLUGINS", None)  # (CI sets it: the failed plugin would exit 1)

    def probing(listing: str) -> dict[str, object]:
        return next(r for r in json.loads(listing) if r["name"] == "fake-probing")

    first = _nyla(["plugins", "list", "--json"], env)
    assert probing(first)["status"] == "failed"
    assert "fake-sandbox-program is not on PATH" in str(probing(first)["error"])
    assert _nyla(["plugins", "list", "--json"], env) == first  # from the cache, reason kept
    _nyla(["--help"], env)
    assert marker.read_text().count("imported") == 1, "a cache hit imported the plugin"

    program = programs / "fake-sandbox-program"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    os.utime(programs, ns=(1, 1))  # a coarse clock must not hide the change
    assert probing(_nyla(["plugins", "list", "--json"], env))["status"] == "ok"
    assert marker.read_text().count("imported") == 2

    _nyla(["plugins", "list", "--refresh", "--json"], env)  # discovers whatever the cache says
    assert marker.read_text().count("imported") == 3
