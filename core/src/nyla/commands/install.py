"""``nyla plugins install|uninstall``: put a plugin into nyla's own environment (as
``llm install`` does), with uv when there is one, else pip.

The environment is the one the running ``nyla`` belongs to (``sys.executable``), so the
plugin lands where nyla discovers entry points. ``make`` syncs the repository's environment
with ``uv sync --inexact``, which leaves packages installed this way in place.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import click

#: how long one install or uninstall may take before it is given up
TIMEOUT_S = 600

Runner = Callable[[Sequence[str]], int]


def installer() -> list[str]:
    """The command prefix that installs into this interpreter's environment."""
    uv = _uv()
    if uv:
        return [uv, "pip", "install", "--python", sys.executable]
    return [sys.executable, "-m", "pip", "install"]


def uninstaller() -> list[str]:
    """The command prefix that removes a distribution from this environment."""
    uv = _uv()
    if uv:
        return [uv, "pip", "uninstall", "--python", sys.executable]
    return [sys.executable, "-m", "pip", "uninstall", "--yes"]


def _uv() -> str | None:
    import shutil  # here, not at the top: `nyla plugins list` never installs

    return shutil.which("uv") or _bundled_uv()


def _bundled_uv() -> str | None:
    # the repository's Makefile bootstraps uv into .tools/ beside .venv/
    candidate = Path(sys.prefix).parent / ".tools" / "bin" / "uv"
    return str(candidate) if candidate.exists() else None


def install_args(targets: Sequence[str], editable: bool) -> list[str]:
    """Arguments for the installer: local folders as paths (editable with ``-e``), anything
    else as a requirement (``nyla-toolbox-dice``, ``nyla-toolbox-dice==0.2``)."""
    args: list[str] = []
    for target in targets:
        path = Path(target).expanduser()
        if path.exists():
            if not (path / "pyproject.toml").exists() and not (path / "setup.py").exists():
                raise click.ClickException(f"{target}: a folder without pyproject.toml")
            args += ["-e", str(path.resolve())] if editable else [str(path.resolve())]
        else:
            args.append(target)
    return args


def run(command: Sequence[str]) -> int:
    """Run an installer command, its output passed through; its exit status."""
    import subprocess

    try:
        return subprocess.call(list(command), timeout=TIMEOUT_S)
    except FileNotFoundError as exc:
        raise click.ClickException(f"cannot run {command[0]}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise click.ClickException(f"{command[0]} did not finish within {TIMEOUT_S} s") from exc


@click.command("install")
@click.argument("targets", nargs=-1, required=True)
@click.option("-e", "--editable", is_flag=True, help="Install local folders in editable mode.")
def install(targets: tuple[str, ...], editable: bool) -> None:
    """Install plugins (a folder or a requirement) into nyla's own environment."""
    status = RUNNER(installer() + install_args(targets, editable))
    if status != 0:
        raise click.ClickException(f"installing {' '.join(targets)} failed (exit {status})")
    click.echo("installed; `nyla plugins list` shows what loaded")


@click.command("uninstall")
@click.argument("names", nargs=-1, required=True)
def uninstall(names: tuple[str, ...]) -> None:
    """Remove plugin distributions (e.g. nyla-toolbox-dice) from nyla's environment."""
    status = RUNNER(uninstaller() + list(names))
    if status != 0:
        raise click.ClickException(f"uninstalling {' '.join(names)} failed (exit {status})")
    click.echo(f"uninstalled {' '.join(names)}")


#: what runs the installer (tests replace it)
RUNNER: Runner = run
