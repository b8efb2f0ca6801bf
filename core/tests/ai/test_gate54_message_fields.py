"""The gate reads each field of a message once: what it replaces, and what it keeps as it is."""

from __future__ import annotations

from nyla.ai.default_neutralizer import DefaultNeutralizer
from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.models.ai import Message, Role, TextPart, ToolCall

EMAIL = "anna@example.ch"


def _gate() -> NeutralizationGate:
    return NeutralizationGate([DefaultNeutralizer()])


def test_only_the_arguments_holding_personal_data_are_replaced() -> None:
    calls = [
        ToolCall(id="a", name="send", arguments=f'{{"to": "{EMAIL}"}}'),
        ToolCall(id="b", name="read", arguments='{"n": 1}'),
        ToolCall(id="c", name="send", arguments=f'{{"cc": "{EMAIL}"}}'),
    ]
    message = Message(role=Role.ASSISTANT, content="sending", tool_calls=calls)
    session = NeutralizationSession()
    [out] = _gate().apply_messages([message], session)
    assert out is not message
    assert out.content == "sending"
    assert [(c.id, c.name) for c in out.tool_calls] == [("a", "send"), ("b", "read"), ("c", "send")]
    assert [c.arguments for c in out.tool_calls] == [
        '{"to": "[EMAIL_1]"}',
        '{"n": 1}',
        '{"cc": "[EMAIL_1]"}',
    ]
    assert message.tool_calls[0].arguments == f'{{"to": "{EMAIL}"}}'  # the source is kept


def test_a_message_without_personal_data_is_the_same_object() -> None:
    calls = [ToolCall(id="a", name="read", arguments='{"n": 1}')]
    plain = Message(role=Role.ASSISTANT, content="reading", tool_calls=calls)
    tool = Message(role=Role.TOOL, content="read 1 ok", tool_call_id="a")
    parts = Message(role=Role.USER, content=[TextPart(text="no data here")])
    session = NeutralizationSession()
    out = _gate().apply_messages([plain, tool, parts], session)
    assert out[0] is plain and out[1] is tool and out[2] is parts


def test_content_and_text_parts_are_replaced_with_the_calls_kept() -> None:
    calls = [ToolCall(id="a", name="read", arguments='{"n": 1}')]
    text = Message(role=Role.ASSISTANT, content=f"mail {EMAIL}", tool_calls=calls)
    parts = Message(role=Role.USER, content=[TextPart(text=f"to {EMAIL}"), TextPart(text="hi")])
    session = NeutralizationSession()
    out = _gate().apply_messages([text, parts], session)
    assert out[0].content == "mail [EMAIL_1]"
    assert out[0].tool_calls == calls
    assert out[1].content == [TextPart(text="to [EMAIL_1]"), TextPart(text="hi")]
    assert session.mapping == {"[EMAIL_1]": EMAIL}
