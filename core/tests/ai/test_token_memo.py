"""The token counter's memos keep nothing alive: a counted message (and what it says) goes
when its run lets it go, and long texts are not memoized at all."""

from __future__ import annotations

import gc
import json
import random
import re
import weakref

import pytest

from nyla.ai import tokens
from nyla.ai.tokens import (
    MEMO_CHARS,
    count_text_tokens,
    count_tool_tokens,
    message_tokens,
    tool_tokens,
)
from nyla.models.ai import Message, Role, ToolDefinition


def test_a_counted_message_is_not_kept_alive() -> None:
    message = Message(role=Role.TOOL, content="Anna Muster, IBAN CH93 0076 2011 6238 5295 7")
    first = message_tokens(message)
    assert message_tokens(message) == first  # memoized while it lives
    alive = weakref.ref(message)
    del message
    gc.collect()
    assert alive() is None


def test_a_message_with_new_content_is_counted_again() -> None:
    message = Message(role=Role.USER, content="short")
    before = message_tokens(message)
    message.content = "a much longer text than before, with many more words in it"
    assert message_tokens(message) > before


def test_long_texts_are_counted_but_not_memoized() -> None:
    info = tokens._count_short.cache_info
    long_text = "word " * (MEMO_CHARS // 5 + 50)
    size = info().currsize
    assert count_text_tokens(long_text) == tokens._count_text(long_text) > 0
    assert info().currsize == size
    short = "a short, memoized text"
    count_text_tokens(short)
    assert info().currsize in (size + 1, info().maxsize)


def test_the_tool_list_memo_counts_each_list_as_it_is() -> None:
    def tool(name: str, description: str) -> ToolDefinition:
        schema = {"type": "object", "properties": {"x": {"type": "string"}}}
        return ToolDefinition(name=name, description=description, parameters=schema)

    a, b, c = tool("readFile", "Read a file."), tool("writeFile", "Write it."), tool("x", "y")
    both = count_tool_tokens([a, b])
    assert both == tool_tokens(a) + tool_tokens(b)
    assert count_tool_tokens([a, b]) == both  # a new list of the same tools: the memo
    # the same first tool with others after it (the memo's key): counted as it is
    assert count_tool_tokens([a, b, c]) == both + tool_tokens(c)
    assert count_tool_tokens([a]) == tool_tokens(a)
    assert count_tool_tokens([]) == 0


def test_a_tool_list_made_anew_is_compared_by_identity_from_its_second_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a run makes its own ``requestToolbox``: equal to the last run's, not the same object
    def tool(description: str) -> ToolDefinition:
        schema = {"type": "object", "properties": {"toolbox": {"enum": ["a", "b"]}}}
        return ToolDefinition(name="requestToolbox", description=description, parameters=schema)

    first, other = tool("Activate a toolbox."), tool("Read.")
    both = count_tool_tokens([other, first])
    again = tool("Activate a toolbox.")
    assert count_tool_tokens([other, again]) == both  # equal by value: the count kept
    compared: list[object] = []
    by_value = ToolDefinition.__eq__

    def counting(self: ToolDefinition, value: object) -> bool:
        compared.append(self)
        return by_value(self, value)

    monkeypatch.setattr(ToolDefinition, "__eq__", counting)
    assert count_tool_tokens([other, again]) == both
    assert compared == []  # the newest objects were kept: no comparison by value
    changed = tool("Activate one of the toolboxes listed here.")
    assert count_tool_tokens([other, changed]) == tool_tokens(other) + tool_tokens(changed)
    assert count_tool_tokens([other, changed]) != both


def _count_word_by_word(text: str) -> int:
    """The counting rule as :func:`tokens.word_tokens` states it, one word at a time."""
    if not text:
        return 0
    n = sum(tokens.word_tokens(len(w)) for w in tokens._WORD.findall(text))
    n += sum(tokens.digit_tokens(len(d)) for d in tokens._DIGITS.findall(text))
    return max(1, n + len(tokens._CJK.findall(text)) + len(tokens._SYMBOL.findall(text)))


def test_counting_long_words_apart_counts_as_word_by_word() -> None:
    rng = random.Random(32)
    alphabet = "abcdefghijÄÖüßéàç0123456789 ,.;:!?-_/{}[]\"'\n\t漢字テスト한국어€$%"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200)))
        text += " " + "x" * rng.randint(0, 40)  # a long word, sometimes
        assert tokens._count_text(text) == _count_word_by_word(text), text


def test_ascii_text_counts_as_word_by_word() -> None:
    """ASCII text takes its own path (bytes.translate, no regex): the same counts, every
    ASCII character among the inputs (the control characters \\s takes included)."""
    rng = random.Random(33)
    alphabet = "".join(chr(i) for i in range(128)) + "abcdefghij" * 4 + "0123" + " " * 8
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200)))
        text += " " + "y" * rng.randint(0, 40)
        assert text.isascii()
        assert tokens._count_text(text) == _count_word_by_word(text), repr(text)
    assert tokens._count_text("\x1c\x1d\x1e\x1f") == 1  # space to \\s: no token, at least 1
    assert tokens._count_text('{"a": 12345}') == 1 + 2 + 5  # a; 123 45; {"":} symbols


def test_a_list_of_one_counts_as_its_item_does() -> None:
    from nyla.ai.tokens import REQUEST_OVERHEAD, count_message_tokens, count_tokens

    message = Message(role=Role.TOOL, content="read 13 ok, 4 files", tool_call_id="c1", name="r")
    other = Message(role=Role.USER, content="and now a longer question about it?")
    assert count_tokens([message]) == count_message_tokens([message]) == count_tokens(message)
    assert count_tokens([message]) == REQUEST_OVERHEAD + message_tokens(message)
    assert count_tokens([message, other]) == count_message_tokens([message, other])
    assert count_tokens(["read 13 ok"]) == count_text_tokens("read 13 ok")  # not a message
    assert count_tokens([]) == count_message_tokens([])


def test_every_code_point_stands_in_as_the_patterns_class_it() -> None:
    """Non-ASCII text is counted on an ASCII stand-in, one character each: every code point's
    stand-in is of the class the patterns give it (a letter of a word, a digit of a number,
    a space, or a token of its own: a CJK character or a symbol, never both), so the runs and
    the counts are the same."""
    text = "".join(map(chr, range(0x80, 0x110000)))
    expected = re.sub(r"[A-Za-zÀ-ÖØ-öø-ÿ]", "a", text)
    expected = re.sub(r"\d", "0", expected)
    expected = re.sub(r"\s", " ", expected)
    expected = re.sub(r"[^a0 ]", "#", expected)
    assert text.encode("ascii", "nyla.tokens.ascii") == expected.encode("ascii")
    assert len(tokens._CJK.findall(text)) + len(tokens._SYMBOL.findall(text)) == expected.count("#")
    for c in text[::997]:  # and in a few places, as the rule counts them
        for sample in (f"ab{c}{c}1{c}é ", f"x{c}", f"{c}7"):
            assert tokens._count_text(sample) == _count_word_by_word(sample), hex(ord(c))


def test_runs_of_any_length_count_as_word_by_word() -> None:
    """Long texts read run lengths off tables up to 255 and count longer runs one by one."""
    for n in (0, 1, 6, 7, 200, 255, 256, 1000):
        for text in ("w" * n + " x" * 70, "7" * n + " 1" * 70, "ü" * n + " 9" * 70):
            assert tokens._count_text(text) == _count_word_by_word(text), (n, text[:3])


def _counted_one_by_one(message: Message) -> int:
    """The message rule as it read before its strings were counted inline: each text, name
    and argument string through count_text_tokens."""
    total = tokens.MESSAGE_OVERHEAD
    if isinstance(message.content, str):
        total += count_text_tokens(message.content)
    else:
        for part in message.content:
            is_text = part.type == "text"
            total += count_text_tokens(part.text) if is_text else tokens.IMAGE_TOKENS
    for call in message.tool_calls:
        total += count_text_tokens(call.name) + count_text_tokens(call.arguments) + 3
    return total


def test_a_message_counts_as_its_strings_count_one_by_one() -> None:
    from nyla.models.ai import ImagePart, TextPart, ToolCall

    long = "Zürich Grüße 12345 " * (MEMO_CHARS // 10)  # past the memo, non-ASCII
    calls = [
        ToolCall(id="a", name="readFile", arguments='{"round": 3}'),
        ToolCall(id="b", name="x" * (MEMO_CHARS + 5), arguments=json.dumps({"text": long})),
        ToolCall(id="c", name="write_d"),
    ]
    messages = [
        Message(role=Role.TOOL, content="read 5 ok", tool_call_id="a", name="readFile"),
        Message(role=Role.USER, content=long),
        Message(role=Role.USER, content=""),
        Message(role=Role.ASSISTANT, content="", tool_calls=calls),
        Message(role=Role.ASSISTANT, content="Let me look.", tool_calls=calls[:1]),
        Message(
            role=Role.USER, content=[TextPart(text="see"), ImagePart(url="u"), TextPart(text=long)]
        ),
    ]
    for message in messages:
        assert message_tokens(message) == _counted_one_by_one(message)
        assert message_tokens(message) == _counted_one_by_one(message)  # the memo's answer
