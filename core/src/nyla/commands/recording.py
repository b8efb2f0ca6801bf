"""``--record`` / ``--replay`` for ``nyla run`` and ``nyla eval run`` (see
:mod:`nyla.ai.recording`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from nyla.kernel import Kernel


def tape_options(*, directory: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The two options; a directory (one file per question) for ``eval run``."""
    what = "DIR" if directory else "FILE"
    kind = "a directory of recordings, one per question and mode" if directory else "a file"
    path = click.Path(file_okay=not directory, dir_okay=directory, path_type=Path)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command = click.option(
            "--replay",
            "replay",
            type=path,
            metavar=what,
            default=None,
            help=f"Answer every model call from {kind} written by --record (no provider is "
            "called); fails when the run asks something else.",
        )(command)
        return click.option(
            "--record",
            "record",
            type=path,
            metavar=what,
            default=None,
            help=f"Write every model call (request after neutralization, response, usage) to {kind}.",
        )(command)

    return decorate


def open_tape(kernel: Kernel, record: Path | None, replay: Path | None, *, directory: bool) -> Any:
    """Install the tape the options ask for on ``kernel.ai``; ``None`` without either."""
    from nyla.ai.recording import RecordingFileError, Tape

    if record and replay:
        raise click.UsageError("--record and --replay exclude each other")
    if not (record or replay):
        return None
    try:
        tape = (
            Tape.replay(replay, directory=directory)
            if replay
            else Tape.record(record, directory=directory)  # type: ignore[arg-type]
        )
    except (RecordingFileError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    kernel.ai.tape = tape
    return tape


def check_replay_model(tape: Any, model: str | None) -> None:
    """A ``--model`` given with ``--replay`` must be one the recording used."""
    known = [m.id for m in tape.models()]
    if model and model not in known:
        raise click.ClickException(
            f"model {model!r} is not in the recording {tape.path} (it has: {', '.join(known) or 'none'})"
        )


def finish_tape(tape: Any) -> None:
    """Close the tape; a replay that drifted becomes a one-line error."""
    from nyla.ai.recording import ReplayDriftError

    if tape is None:
        return
    try:
        tape.finish()
    except ReplayDriftError as exc:
        raise click.ClickException(str(exc)) from None


def tape_drift(tape: Any) -> str | None:
    """Close the tape; the drift of a replay as one line, or ``None``."""
    try:
        finish_tape(tape)
    except click.ClickException as exc:
        return exc.message
    return None
