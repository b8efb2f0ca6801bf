"""Conversation manager: temporal block, units never split, referenced results kept."""

from __future__ import annotations

from datetime import UTC, datetime

from nyla.agent.conversation import (
    KEEP_LATEST_UNITS,
    ConversationManager,
    build_system_prompt,
    temporal_block,
    units_of,
)
from nyla.models.ai import Message, Role, ToolCall

NOW = datetime(2026, 1, 31, 23, 30, tzinfo=UTC)


def test_temporal_block_uses_the_users_zone():
    block = temporal_block("Europe/Zurich", NOW)
    assert "Sunday, 2026-02-01 00:30" in block and "Europe/Zurich, UTC+01:00" in block


def test_missing_or_invalid_zone_falls_back_to_utc():
    for zone in (None, "", "Mars/Olympus", "../etc/passwd"):
        assert "Saturday, 2026-01-31 23:30 (UTC, UTC+00:00)" in temporal_block(zone, NOW)


def test_system_prompt_keeps_a_custom_base():
    prompt = build_system_prompt("You answer questions about tables.", "UTC", NOW)
    assert prompt.startswith("You answer questions about tables.")
    assert "2026-01-31" in prompt


def assistant_calls(*ids: str) -> Message:
    return Message(
        role=Role.ASSISTANT,
        tool_calls=[ToolCall(id=i, name="t", arguments="{}") for i in ids],
    )


def result(call_id: str, text: str) -> Message:
    return Message(role=Role.TOOL, content=text, tool_call_id=call_id, name="t")


def test_a_tool_call_and_its_results_form_one_unit():
    messages = [
        Message(role=Role.USER, content="go"),
        assistant_calls("a", "b"),
        result("a", "1"),
        result("b", "2"),
        Message(role=Role.ASSISTANT, content="thinking"),
    ]
    units = units_of(messages)
    assert [len(u) for u in units] == [1, 3, 1]


async def test_summary_keeps_referenced_results_and_the_latest_turns():
    conv = ConversationManager("system", "task")
    file_id = "0b5e8f5e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    conv.add(assistant_calls("c0"))
    conv.add(result("c0", f"Created 'x.md'\n  file id: {file_id}"))
    for i in range(1, 6):
        conv.add(assistant_calls(f"c{i}"))
        conv.add(result(f"c{i}", f"noise {i}"))
    # the latest turn refers to the file created in the first one
    conv.add(
        Message(
            role=Role.ASSISTANT,
            tool_calls=[ToolCall(id="c9", name="readFile", arguments=f'{{"fileId": "{file_id}"}}')],
        )
    )
    conv.add(result("c9", "content"))
    seen: list[str] = []

    async def summarizer(transcript: str) -> str:
        seen.append(transcript)
        return "SUMMARY"

    assert await conv.summarize(summarizer)
    texts = [m.text for m in conv.messages]
    assert texts[:2] == ["system", "task"] and texts[2].endswith("SUMMARY")
    assert any(file_id in t for t in texts[3:])  # the referenced result survived verbatim
    assert "noise 1" in seen[0] and "noise 5" not in seen[0]
    kept_units = units_of(conv.messages[3:])
    assert len(kept_units) == KEEP_LATEST_UNITS + 1
    for unit in kept_units:  # never a result without its call
        if unit[0].role is Role.TOOL:
            raise AssertionError("orphaned tool result")


async def test_nothing_to_summarize_in_a_short_conversation():
    conv = ConversationManager("system", "task")
    conv.add(assistant_calls("a"))
    conv.add(result("a", "1"))

    async def summarizer(transcript: str) -> str:
        raise AssertionError("not called")

    assert await conv.summarize(summarizer) is False
    assert conv.needs_summary(None) is False
    assert conv.needs_summary(10) is True


def test_the_stock_counter_counts_each_message_as_the_service_does():
    """A run on an AI service with the stock counter counts through nyla.ai.tokens directly;
    the totals are what the service's count_tokens says of each message."""
    from nyla.agent.conversation import token_counter
    from nyla.ai import tokens
    from nyla.ai.service import AiService

    ai = object.__new__(AiService)
    counter = token_counter(ai, lambda: "some-model")
    assert counter is tokens.count_tokens
    conversation = ConversationManager("system", "the task", count_tokens=counter)
    added = [
        assistant_calls("a", "b"),
        Message(role=Role.TOOL, content="read 5 ok", tool_call_id="a", name="t"),
        Message(role=Role.TOOL, content="Grüße aus Zürich " * 100, tool_call_id="b", name="t"),
        Message(role=Role.ASSISTANT, content="done"),
    ]
    for message in added:
        conversation.add(message)
    expected = sum(ai.count_tokens([m], "some-model") for m in conversation.messages)
    assert conversation.tokens() == expected


def test_a_service_with_its_own_counter_is_asked_with_the_runs_model():
    from nyla.agent.conversation import token_counter
    from nyla.ai.service import AiService

    class Counting(AiService):
        def count_tokens(self, text_or_messages, model_id=None):
            asked.append(model_id)
            return 7

    asked: list[str | None] = []
    ai = object.__new__(Counting)
    conversation = ConversationManager(
        "system", "the task", count_tokens=token_counter(ai, lambda: "the-model")
    )
    conversation.add(Message(role=Role.ASSISTANT, content="done"))
    assert conversation.tokens() == 21 and asked == ["the-model"] * 3
    ai.count_tokens = lambda messages, model_id=None: 1  # type: ignore[method-assign]
    assert token_counter(ai, lambda: "m")([]) == 1
