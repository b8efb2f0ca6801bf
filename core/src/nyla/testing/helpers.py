"""Small helpers for tests of agent runs and toolboxes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentEvent, EventType


class ToolboxPlugin:
    """A plugin object contributing the given toolboxes (for ``make_host`` / ``make_kernel``)."""

    def __init__(self, *toolboxes: Any) -> None:
        self._toolboxes = list(toolboxes)

    @hookimpl
    def nyla_toolboxes(self) -> list[Any]:
        """The toolboxes given to the constructor."""
        return list(self._toolboxes)


async def collect_events(events: AsyncIterator[AgentEvent]) -> list[AgentEvent]:
    """Every event of a run."""
    return [e async for e in events]


def events_of(events: list[AgentEvent], kind: EventType) -> list[AgentEvent]:
    """The events of one type."""
    return [e for e in events if e.type is kind]


def invoke_cli(args: list[str], **kwargs: Any) -> Any:
    """Run the ``nyla`` command in-process with ``args`` (a click ``Result``: ``exit_code``,
    ``output``); keyword arguments go to :meth:`click.testing.CliRunner.invoke`."""
    import copy

    from click.testing import CliRunner

    from nyla.cli import cli

    # A fresh copy of the group for each call: the commands plugins add are looked up once
    # per group, and a test that discovered a narrower plugin set must not hide another's.
    group = copy.copy(cli)
    group.commands = {}  # the kernel's own commands are lazy, outside this dict
    group.__dict__.pop("_plugin_commands_added", None)
    return CliRunner().invoke(group, args, **kwargs)
