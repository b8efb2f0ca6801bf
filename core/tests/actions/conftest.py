"""A plugin contributing a method whose action writes and takes references (``probe``)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from nyla.sdk import ToolContext, hookimpl
from nyla.sdk.actions import Action, ActionParams, FeatureInstanceId, FileId, Method


class NoteParams(ActionParams):
    """Parameters of ``probe.note``."""

    title: str = Field(description="The note's title.")
    count: int = Field(1, ge=1, description="How often.")
    instance: FeatureInstanceId | None = Field(None, description="The feature instance.")
    sources: list[FileId] = Field(default_factory=list, description="Files it cites.")
    label: str | None = Field(None, description="A free label.")


class ProbePlugin:
    """Contributes the ``probe`` method; ``calls`` holds the parameters each call got."""

    params = NoteParams

    def __init__(self) -> None:
        self.calls: list[NoteParams] = []

    async def note(self, params: NoteParams, ctx: ToolContext) -> dict[str, Any]:
        self.calls.append(params)
        return {"title": params.title, "count": params.count, "instance": params.instance}

    @hookimpl
    def nyla_methods(self) -> list[Method]:
        note = Action(
            name="note",
            description="Write a note.",
            params=NoteParams,
            handler=self.note,
            writes=True,
        )
        return [Method(name="probe", description="Test actions.", actions=[note])]


@pytest.fixture
def probe() -> ProbePlugin:
    """A fresh ``probe`` plugin."""
    return ProbePlugin()
