"""Helpers of the agent tests: event collection and a plugin contributing test toolboxes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentEvent, EventType


class ToolboxPlugin:
    """A plugin object contributing the given toolboxes."""

    def __init__(self, *toolboxes: Any) -> None:
        self._toolboxes = list(toolboxes)

    @hookimpl
    def nyla_toolboxes(self) -> list[Any]:
        return list(self._toolboxes)


async def collect(events: AsyncIterator[AgentEvent]) -> list[AgentEvent]:
    """Every event of a run."""
    return [e async for e in events]


def of(events: list[AgentEvent], kind: EventType) -> list[AgentEvent]:
    """The events of one type."""
    return [e for e in events if e.type is kind]


@pytest.fixture
def toolbox_plugin():
    return ToolboxPlugin


@pytest.fixture
def run_events():
    """``await run_events(async_iterator)`` -> list of events."""
    return collect


@pytest.fixture
def only():
    """``only(events, EventType.X)`` -> the events of that type."""
    return of
