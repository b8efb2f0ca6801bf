"""``nyla plugins install|uninstall`` run the installer for nyla's own interpreter, with a
folder as a path and anything else as a requirement; failures end in one clear line."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from nyla.commands import install
from nyla.testing import invoke_cli


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []

    def runner(command: Sequence[str]) -> int:
        calls.append(list(command))
        return 0

    monkeypatch.setattr(install, "RUNNER", runner)
    return calls


def test_install_a_folder_targets_this_interpreter(ran: list[list[str]], tmp_path: Path) -> None:
    plugin = tmp_path / "nyla-toolbox-dice"
    plugin.mkdir()
    (plugin / "pyproject.toml").write_text("[project]\nname = 'nyla-toolbox-dice'\n")
    result = invoke_cli(["plugins", "install", "-e", str(plugin), "nyla-toolbox-other==1.0"])
    assert result.exit_code == 0, result.output
    (command,) = ran
    assert sys.executable in command
    assert command[-3:] == ["-e", str(plugin.resolve()), "nyla-toolbox-other==1.0"]
    assert "nyla plugins list" in result.output


def test_a_folder_without_pyproject_is_refused(ran: list[list[str]], tmp_path: Path) -> None:
    result = invoke_cli(["plugins", "install", str(tmp_path)])
    assert result.exit_code == 1 and "without pyproject.toml" in result.output
    assert ran == []


def test_uninstall_and_a_failing_installer(
    ran: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke_cli(["plugins", "uninstall", "nyla-toolbox-dice"])
    assert result.exit_code == 0 and ran[-1][-1] == "nyla-toolbox-dice"
    assert sys.executable in ran[-1]
    monkeypatch.setattr(install, "RUNNER", lambda command: 2)
    failed = invoke_cli(["plugins", "install", "nyla-toolbox-dice"])
    assert failed.exit_code == 1 and "installing nyla-toolbox-dice failed (exit 2)" in failed.output
