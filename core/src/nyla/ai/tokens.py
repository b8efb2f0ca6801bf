"""Offline token counting.

tiktoken downloads its encoding files on first use, which fails without network, so nyla
counts with a calibrated character heuristic instead: it never touches the network and is
deterministic. Calibration (cl100k/o200k-style BPE on mixed English/German prose, code and
JSON): about 4 characters per token for Latin text, words count at least one token each,
digits and punctuation are denser, and CJK characters are about one token each. Counts are
estimates for selection and budget preflight; billing uses the usage the provider reports.
"""

from __future__ import annotations

import codecs
import json
import re
import weakref
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from nyla.models.ai import Message, ToolDefinition

#: tokens added per message for role and separators (OpenAI's documented chat overhead)
MESSAGE_OVERHEAD = 4
#: tokens added once per request (reply priming)
REQUEST_OVERHEAD = 3
#: tokens assumed for one image part (a low-detail image on the OpenAI scale)
IMAGE_TOKENS = 85

_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]+")
_DIGITS = re.compile(r"\d+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_SYMBOL = re.compile(r"[^\sA-Za-zÀ-ÖØ-öø-ÿ\d\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


#: strings up to this length are memoized (longer ones would keep documents and tool
#: results alive in the process after their run; a message is counted once anyway)
MEMO_CHARS = 1024


def count_text_tokens(text: str) -> int:
    """Estimated tokens of one string (0 for the empty string).

    Short strings are memoized: an agent run re-sends its whole history every round, so the
    same names, arguments and short results are counted again and again (``str`` caches its
    hash, so a hit costs no rescan). Longer strings are counted each time they are asked for;
    :func:`message_tokens` counts a message once while it lives.
    """
    if len(text) <= MEMO_CHARS:
        return _count_short(text)
    return _count_text(text)


def count_text_tokens_once(text: str) -> int:
    """Estimated tokens of a string counted once, e.g. a chunk being indexed or embedded:
    never memoized, so a bulk load does not keep thousands of its texts alive in the memo."""
    return _count_text(text)


@lru_cache(maxsize=8192)
def _count_short(text: str) -> int:
    return _count_text(text)


def word_tokens(length: int) -> int:
    """Tokens of one run of ``length`` Latin letters: a short word is one token, a long one
    splits roughly every 4 characters."""
    return max(1, round(length / 4.2))


def digit_tokens(length: int) -> int:
    """Tokens of one run of ``length`` digits (BPE vocabularies hold numbers in groups of at
    most 3). Every other character that is not a space (a CJK character, a symbol) is one
    token."""
    return (length + 2) // 3


def _ascii_table(keep: str) -> bytes:
    """A ``bytes.translate`` table that maps every byte outside ``keep`` to a space."""
    return bytes(i if chr(i) in keep else 0x20 for i in range(256))


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ASCII_DIGITS = "0123456789"
#: the ASCII characters that are letters, digits or space to the patterns above (``\s`` of a
#: ``str`` pattern takes \x1c-\x1f too): deleting them leaves the symbols
_NOT_SYMBOL = bytes(i for i in range(128) if not _SYMBOL.match(chr(i)))
_ONLY_LETTERS = _ascii_table(_LETTERS)
_ONLY_DIGITS = _ascii_table(_ASCII_DIGITS)


class _AsciiStandIns(dict[int, int]):
    """Code point of a non-ASCII character -> the ASCII character it counts as under the
    patterns above: a letter of ``[À-ÖØ-öø-ÿ]`` as ``a`` (it belongs to a word), a ``\\d``
    digit (``str.isdecimal``, as ``re`` has it) as ``0``, a ``\\s`` space (``str.isspace``)
    as a space, and every other character (a CJK character or a symbol: one token each, and
    the end of a word or a number) as ``#``. Filled on first sight of a character, up to
    :data:`_STAND_INS_MAX` of them."""

    def __missing__(self, code: int) -> int:
        char = chr(code)
        if 0xC0 <= code <= 0xFF and code not in (0xD7, 0xF7):
            stand_in = "a"
        elif char.isdecimal():
            stand_in = "0"
        elif char.isspace():
            stand_in = " "
        else:
            stand_in = "#"
        if len(self) < _STAND_INS_MAX:
            self[code] = ord(stand_in)
        return ord(stand_in)


_STAND_INS_MAX = 8192
_STAND_INS = _AsciiStandIns()


def _as_ascii(error: UnicodeError) -> tuple[str, int]:
    """Encoding error handler: a run of non-ASCII characters as their ASCII stand-ins."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return error.object[error.start : error.end].translate(_STAND_INS), error.end


codecs.register_error("nyla.tokens.ascii", _as_ascii)


def _count_text(text: str) -> int:
    """The counting rule of the patterns above, on the text's ASCII stand-in (each non-ASCII
    character replaced by one that counts the same, see :class:`_AsciiStandIns`): one
    ``encode`` in C that calls back once per run of non-ASCII characters, not five regex
    scans (a 3,000-character German text ~2.8 M -> ~0.1 M instructions, the same count;
    tested on every code point)."""
    if not text:
        return 0
    return _count_ascii(text.encode("ascii", "nyla.tokens.ascii"))


def _count_ascii(raw: bytes) -> int:
    """:func:`_count_text`'s rule on ASCII text (most of what an agent sends: JSON, code,
    English), with ``bytes.translate`` and ``split`` instead of five regex scans; no CJK
    there. About a quarter of the time, the same count (tested on random text)."""
    words = raw.translate(_ONLY_LETTERS).split()
    numbers = raw.translate(_ONLY_DIGITS).split()
    tokens = len(words) + len(raw.translate(None, _NOT_SYMBOL))
    if len(raw) >= _MANY_RUNS:
        tokens += _run_tokens(words, _WORD_EXTRA, _word_extra)
        tokens += _run_tokens(numbers, _DIGIT_TOKENS, digit_tokens)
        return max(1, tokens)
    for word in words:  # (a few runs: a step each costs less than the tables' set-up)
        if len(word) > 6:
            tokens += word_tokens(len(word)) - 1
    for number in numbers:  # digit_tokens, written out: a frame a number was ~0.4k instructions
        tokens += (len(number) + 2) // 3
    return max(1, tokens)


#: a text this long is counted through :func:`_run_tokens`
_MANY_RUNS = 128


def _word_extra(length: int) -> int:
    return word_tokens(length) - 1


#: :func:`_word_extra` and :func:`digit_tokens` of each run length below 256 (both < 256)
_WORD_EXTRA = bytes(_word_extra(n) for n in range(256))
_DIGIT_TOKENS = bytes(digit_tokens(n) for n in range(256))


def _run_tokens(runs: list[bytes], table: bytes, rule: Callable[[int], int]) -> int:
    """``rule`` summed over the lengths of ``runs`` (``table``: ``rule`` of 0..255): the
    lengths as bytes translated by ``table`` in C when every run is shorter than 256 (a
    Python step per run cost ~0.3k instructions: a long text has hundreds)."""
    lengths = list(map(len, runs))
    try:
        return sum(bytes(lengths).translate(table))
    except ValueError:  # a run of 256 or more
        return sum(map(rule, lengths))


#: id(message) -> (weak reference to it, id of its content, tokens); a message is counted by
#: the conversation when it is added and by the AI service when it is sent. Weak: the memo
#: never keeps a message (or what it says) alive after its run.
_MESSAGE_TOKENS: dict[int, tuple[weakref.ref[Message], int, int]] = {}
_MESSAGE_TOKENS_MAX = 4096


def message_tokens(message: Message) -> int:
    """Estimated tokens of one message, its per-message overhead included (counted once per
    message while it lives; messages are treated as immutable once counted, a new
    ``content`` is seen).

    A text and a tool call's name and arguments are counted as :func:`count_text_tokens`
    counts them, its rule written out here: the agent's conversation counts five messages a
    round, and a frame a string (nine for a turn of four calls) cost ~0.7k instructions each.
    """
    key = id(message)
    hit = _MESSAGE_TOKENS.get(key)
    content = message.content
    if hit is not None and hit[0]() is message and hit[1] == id(content):
        return hit[2]
    if isinstance(content, str):
        total = MESSAGE_OVERHEAD + (
            _count_short(content) if len(content) <= MEMO_CHARS else _count_text(content)
        )
    else:
        total = MESSAGE_OVERHEAD
        for part in content:
            total += count_text_tokens(part.text) if part.type == "text" else IMAGE_TOKENS
    for call in message.tool_calls:
        name, arguments = call.name, call.arguments
        total += (
            (_count_short(name) if len(name) <= MEMO_CHARS else _count_text(name))
            + (_count_short(arguments) if len(arguments) <= MEMO_CHARS else _count_text(arguments))
            + 3
        )
    if len(_MESSAGE_TOKENS) >= _MESSAGE_TOKENS_MAX:
        _MESSAGE_TOKENS.clear()
    _MESSAGE_TOKENS[key] = (weakref.ref(message), id(content), total)
    return total


def count_message_tokens(messages: Iterable[Message]) -> int:
    """Estimated prompt tokens of a conversation, including per-message overhead."""
    return REQUEST_OVERHEAD + sum(message_tokens(m) for m in messages)


#: id(tool definition) -> (definition, tokens); a run sends the same definitions every round
_TOOL_TOKENS: dict[int, tuple[ToolDefinition, int]] = {}
_TOOL_TOKENS_MAX = 4096


def tool_tokens(tool: ToolDefinition) -> int:
    """Estimated tokens one tool definition adds to a prompt (counted once per definition;
    definitions are treated as immutable once sent)."""
    hit = _TOOL_TOKENS.get(id(tool))
    if hit is not None and hit[0] is tool:
        return hit[1]
    n = 8 + count_text_tokens(tool.name) + count_text_tokens(tool.description)
    n += count_text_tokens(json.dumps(tool.parameters, separators=(",", ":")))
    if len(_TOOL_TOKENS) >= _TOOL_TOKENS_MAX:
        _TOOL_TOKENS.clear()
    _TOOL_TOKENS[id(tool)] = (tool, n)
    return n


#: id(first definition) -> (the definitions, their tokens): a run sends the same list every
#: round, compared in one pass in C (identity first) instead of a look-up per tool
_TOOL_SETS: dict[int, tuple[tuple[ToolDefinition, ...], int]] = {}
_TOOL_SETS_MAX = 64


def count_tool_tokens(tools: Iterable[ToolDefinition]) -> int:
    """Estimated tokens the tool definitions add to a prompt."""
    key = tuple(tools)
    if not key:
        return 0
    hit = _TOOL_SETS.get(id(key[0]))
    if hit is not None and hit[0] == key:
        # the newest objects kept: a definition made anew but equal (a run's own
        # ``requestToolbox``) is then compared by identity from the next round on, not by value
        _TOOL_SETS[id(key[0])] = (key, hit[1])
        return hit[1]
    total = sum(tool_tokens(t) for t in key)
    if len(_TOOL_SETS) >= _TOOL_SETS_MAX:
        _TOOL_SETS.clear()
    _TOOL_SETS[id(key[0])] = (key, total)
    return total


def count_tokens(text_or_messages: Any, model_id: str | None = None) -> int:
    """Estimated tokens of a string, a message, or a list of messages / strings.

    ``model_id`` is accepted for API stability (a future per-model tokenizer); the heuristic
    is the same for every model today.
    """
    del model_id
    if type(text_or_messages) is list and len(text_or_messages) == 1:
        # one message at a time, as the agent's conversation counts each it adds (five a
        # round): no generators over a list of one (~12k -> ~5k instructions)
        only = text_or_messages[0]
        if isinstance(only, Message):
            return REQUEST_OVERHEAD + message_tokens(only)
    if text_or_messages is None:
        return 0
    if isinstance(text_or_messages, str):
        return count_text_tokens(text_or_messages)
    if isinstance(text_or_messages, Message):
        return count_message_tokens([text_or_messages])
    items = list(text_or_messages)
    if all(isinstance(m, Message) for m in items):
        return count_message_tokens(items)
    return sum(count_tokens(m) for m in items)
