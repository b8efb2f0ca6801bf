"""Real entry points: fixture plugin distributions installed into a throwaway environment,
inspected through the real `nyla` command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixture_plugins"

pytestmark = pytest.mark.slow


def _uv() -> str:
    found = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    if not Path(found).exists():
        pytest.skip("uv is not available (make setup installs it)")
    return found


@pytest.fixture(scope="module")
def throwaway(tmp_path_factory: pytest.TempPathFactory):
    """A venv that sees the workspace's packages (through a .pth) plus the fixture plugins."""
    venv = tmp_path_factory.mktemp("env") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    env_python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(env_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    main_site = sysconfig.get_paths()["purelib"]
    Path(purelib, "zz_workspace.pth").write_text(f"import site; site.addsitedir({main_site!r})\n")

    def install(*names: str) -> None:
        subprocess.run(
            [
                _uv(),
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--python",
                str(env_python),
                *[str(FIXTURES / n) for n in names],
            ],
            check=True,
            env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        )

    def nyla(*args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(env_python), "-m", "nyla.cli", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "NYLA_STRICT_PLUGINS": "0", **env},
        )

    install("good", "broken", "clash")
    return nyla


def _by_name(nyla) -> dict:
    result = nyla("plugins", "list", "--json")
    assert result.returncode == 0, result.stderr
    return {p["name"]: p for p in json.loads(result.stdout)}


def test_list_reports_each_fixture_plugin(throwaway):
    plugins = _by_name(throwaway)
    good = plugins["fixture-good"]
    assert good["status"] == "ok" and good["error"] is None
    assert good["distribution"] == "nyla-fixture-good" and good["version"] == "0.0.1"
    assert good["group"] == "nyla.toolboxes"
    assert good["contributes"] == {"toolboxes": ["fixturebox"], "tools": ["fixtureEcho"]}

    broken = plugins["fixture-broken"]
    assert broken["status"] == "failed"
    assert "nyla_this_module_does_not_exist" in broken["error"]
    assert broken["distribution"] == "nyla-fixture-broken"

    clash = plugins["fixture-zclash"]
    assert clash["status"] == "failed"
    assert "'fixturebox' is already registered by plugin 'fixture-good'" in clash["error"]


def test_check_fails_naming_the_broken_plugins(throwaway):
    result = throwaway("plugins", "check", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    failed = {p["plugin"] for p in report["problems"]}
    assert {"fixture-broken", "fixture-zclash"} <= failed
    assert "fixture-good" not in failed


def test_check_of_the_good_plugin_alone_passes(throwaway):
    result = throwaway("plugins", "check", "fixture-good")
    assert result.returncode == 0, result.stdout + result.stderr


def test_disable_and_only_filters(throwaway):
    plugins = _by_name(lambda *a: throwaway(*a, NYLA_DISABLE_PLUGINS="fixture-broken"))
    assert plugins["fixture-broken"]["status"] == "disabled"
    result = throwaway("plugins", "list", "--json", NYLA_PLUGINS="fixture-good")
    statuses = {p["name"]: p["status"] for p in json.loads(result.stdout)}
    assert statuses["fixture-good"] == "ok"
    assert statuses["fixture-zclash"] == "disabled"


def test_strict_mode_turns_failures_into_an_error(throwaway):
    result = throwaway("plugins", "list", "--json", NYLA_STRICT_PLUGINS="1")
    assert result.returncode != 0
    assert "fixture-broken" in result.stderr
