"""The answer's neutralization report counts the run session's placeholders once, whether the
answer is restored or not (the service counts the session once for both)."""

from __future__ import annotations

import pytest

from nyla.ai.neutralize import NeutralizationSession
from nyla.models.ai import AiCallRequest, Message, OperationType, Role
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider


@pytest.mark.parametrize("restore", [True, False])
async def test_the_report_counts_the_session_s_placeholders(make_kernel, restore: bool) -> None:
    provider = ScriptedProvider(lambda r, i: r.messages[0].text)  # echoes the placeholders
    kernel = make_kernel(ScriptedPlugin(provider))  # the built-in neutralizers
    session = NeutralizationSession()
    text = "mail anna@example.ch and bert@example.ch"
    response = await kernel.ai.call(
        AiCallRequest(
            operation=OperationType.AGENT,
            messages=[Message(role=Role.USER, content=text)],
            neutralization=session,
            restore_output=restore,
        )
    )
    assert len(session) >= 2
    assert response.neutralization.placeholders == len(session)
    assert response.neutralization.errors == []
    assert ("anna@example.ch" in response.content) is restore
