"""The token counter's memos keep nothing alive: a counted message (and what it says) goes
when its run lets it go, and long texts are not memoized at all."""

from __future__ import annotations

import gc
import weakref

from nyla.ai import tokens
from nyla.ai.tokens import MEMO_CHARS, count_text_tokens, message_tokens
from nyla.models.ai import Message, Role


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
