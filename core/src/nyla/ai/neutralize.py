"""The neutralization gate: the only place personal data is replaced before a model call.

Every neutralizer from ``nyla_neutralizers`` only *finds* spans; the gate merges their
findings, resolves overlaps (the earliest, then the longest span wins) and replaces each value
with a placeholder such as ``[EMAIL_1]``. A :class:`NeutralizationSession` keeps the mapping
for one run so the same value gets the same placeholder in every call of that run; the mapping
never leaves the process, and :meth:`NeutralizationSession.restore` re-personalizes text.

A value found once is replaced wherever it stands as a word of its own, in that text and every
later text of the session (:mod:`nyla.ai.known_values`): a name found after a title (``Herr Hans
Müller``) comes back in the model's answer and in what tools return, where it stands alone and
the detectors, which need its context, would let it through to the next call.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nyla.ai.image_gate import neutralize_image
from nyla.ai.known_values import known_findings
from nyla.ai.tokens import message_tokens
from nyla.errors import NeutralizationError
from nyla.models.ai import ImagePart, Message, TextPart, ToolCall
from nyla.models.neutralize import Finding

log = logging.getLogger(__name__)

PLACEHOLDER = re.compile(r"\[([A-Z][A-Z0-9]*)_(\d+)\]")

#: what a memo of the gate is keyed on besides its input: each neutralizer's id and object (an
#: object of the same id, e.g. a plugin built again with other settings, is another neutralizer)
Signature = tuple[tuple[str, int], ...]
#: id(message) -> (the message, its neutralized copy, its tokens)
_Memo = dict[int, tuple[Message, Message, int]]


class NeutralizationSession:
    """Placeholders of one run: value -> ``[CATEGORY_n]`` and back. A run's calls are
    sequential; the gate holds :attr:`lock` while it neutralizes, since a long text is
    neutralized in a worker thread (:mod:`nyla.cpu`)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._by_value: dict[str, str] = {}
        self._by_placeholder: dict[str, tuple[str, str]] = {}
        self._counters: dict[str, int] = {}
        # (neutralizers, text) -> (values known then, neutralized text): a run re-sends its
        # whole history every round, and stable placeholders make the result of a text final
        # once computed, until the session learns a value the text may hold
        self._cache: dict[tuple[Signature, str], tuple[int, str]] = {}
        # (neutralizers, digest of an image) -> the image as checked (OCR is slow)
        self._images: dict[tuple[Signature, str], ImagePart] = {}
        # the neutralizers a result above was computed by, kept alive with the session: a
        # signature names each by its object's id(), which no other object can take meanwhile
        self._computed_by: dict[int, Any] = {}
        # the last call of each conversation (keyed by its first message): see
        # NeutralizationGate.prepare_messages
        self._histories: dict[int, _History] = {}

    def placeholder_for(self, category: str, value: str) -> str:
        """The stable placeholder of ``value`` (created on first sight)."""
        existing = self._by_value.get(value)
        if existing is not None:
            return existing
        category = re.sub(r"[^A-Z0-9]", "", category.upper()) or "PII"
        n = self._counters.get(category, 0) + 1
        self._counters[category] = n
        placeholder = f"[{category}_{n}]"
        self._by_value[value] = placeholder
        self._by_placeholder[placeholder] = (category, value)
        return placeholder

    def restore(self, text: str) -> str:
        """``text`` with every known placeholder replaced by its original value."""
        if not text or not self._by_placeholder:
            return text

        def sub(match: re.Match[str]) -> str:
            hit = self._by_placeholder.get(match.group(0))
            return hit[1] if hit else match.group(0)

        return PLACEHOLDER.sub(sub, text)

    def is_placeholder(self, text: str) -> bool:
        """Whether ``text`` is one of this session's placeholders."""
        return text in self._by_placeholder

    @property
    def mapping(self) -> dict[str, str]:
        """A copy of placeholder -> original value."""
        return {p: v for p, (_, v) in self._by_placeholder.items()}

    def table(self) -> list[dict[str, str]]:
        """Rows ``{placeholder, category, value}`` in creation order (for ``nyla ai neutralize``)."""
        rows = self._by_placeholder.items()
        return [{"placeholder": p, "category": c, "value": v} for p, (c, v) in rows]

    def __len__(self) -> int:
        return len(self._by_placeholder)

    def __bool__(self) -> bool:  # an empty session is still a session (`session or ...`)
        return True

    def __repr__(self) -> str:  # never print the values
        return f"NeutralizationSession({len(self)} placeholders)"


@dataclass(slots=True)
class _History:
    """One conversation's last call: its messages, their neutralized copies and the running
    token count after each (``cumulative[i]`` = tokens of ``neutral[: i + 1]``)."""

    signature: Signature
    sources: list[Message]
    neutral: list[Message]
    cumulative: list[int]

    def memo(self) -> _Memo:
        """id(source) -> (source, neutralized copy, its tokens)."""
        out, previous = {}, 0
        for source, neutral, total in zip(self.sources, self.neutral, self.cumulative, strict=True):
            out[id(source)] = (source, neutral, total - previous)
            previous = total
        return out


#: conversations whose last call a session remembers (a run, its sub-agents, summaries)
MAX_HISTORIES = 8


class NeutralizationGate:
    """Runs every neutralizer over a text and replaces what they find.

    A neutralizer that raises or returns spans that do not match the text is a failure: with
    ``require=True`` the gate raises :class:`NeutralizationError` (the call is blocked);
    otherwise the failure is logged, recorded in :attr:`errors`, and the other neutralizers'
    findings are still applied.
    """

    def __init__(self, neutralizers: Sequence[Any], *, require: bool = False) -> None:
        self.neutralizers = list(neutralizers)
        self.require = require
        signature = []  # (a loop: a generator costs twice as much)
        for n in self.neutralizers:
            signature.append((str(_neutralizer_id(n)), id(n)))
        self._signature: Signature = tuple(signature)
        self.errors: list[str] = []
        self.replaced = 0
        self._pinned: NeutralizationSession | None = None

    def for_call(self) -> NeutralizationGate:
        """This gate for one call: :attr:`errors` and :attr:`replaced` its own, the rest shared."""
        gate = object.__new__(NeutralizationGate)
        gate.neutralizers, gate.require = self.neutralizers, self.require
        gate._signature, gate.errors, gate.replaced, gate._pinned = self._signature, [], 0, None
        return gate

    def _pin(self, session: NeutralizationSession) -> None:
        """Keep the neutralizers alive with ``session``, whose memos name them by ``id()``."""
        for neutralizer in self.neutralizers:
            session._computed_by[id(neutralizer)] = neutralizer
        self._pinned = session

    def _fail(self, neutralizer_id: str, reason: str) -> None:
        message = f"neutralizer {neutralizer_id!r} failed: {reason}"
        if self.require:
            raise NeutralizationError(message + " (neutralization is required: call blocked)")
        log.warning(message)
        self.errors.append(message)  # every failure: the memos below count them (route dedupes)

    def findings(self, text: str) -> list[Finding]:
        """All valid findings of all neutralizers in ``text`` (overlaps not yet resolved)."""
        found: list[Finding] = []
        for neutralizer in self.neutralizers:
            try:
                result = list(neutralizer.find(text))
            except Exception as exc:
                self._fail(_neutralizer_id(neutralizer), repr(exc))
                continue
            for f in result:
                if not isinstance(f, Finding) or text[f.start : f.end] != f.value or not f.value:
                    reason = f"returned a finding that is not a span of the text: {f!r}"
                    self._fail(_neutralizer_id(neutralizer), reason)
                    break
                found.append(f)
        return found

    def apply(self, text: str, session: NeutralizationSession) -> str:
        """``text`` with personal data replaced by the session's placeholders."""
        if not text or not self.neutralizers:
            return text
        cached = session._cache.get((self._signature, text))
        if cached is not None and cached[0] == len(session._by_value):
            return cached[1]
        with session.lock:
            return self._apply_held(text, session)

    def _apply_held(self, text: str, session: NeutralizationSession) -> str:
        """:meth:`apply` with ``session.lock`` held by the caller (a message of
        :meth:`prepare_messages` does not take it again for each of its texts)."""
        if not text or not self.neutralizers:
            return text
        key = (self._signature, text)
        cached = session._cache.get(key)
        if cached is not None and cached[0] == len(session._by_value):
            return cached[1]
        errors_before = len(self.errors)
        result = self._apply(text, session)
        if len(self.errors) == errors_before:  # a partial result is never reused
            if self._pinned is not session:
                self._pin(session)
            session._cache[key] = (len(session._by_value), result)
        return result

    def _apply(self, text: str, session: NeutralizationSession) -> str:
        found = self.findings(text)
        if not found and not session._by_value:
            return text  # nothing found, no value known: nothing to replace (most texts)
        held = ((v, session._by_placeholder[p][0]) for v, p in session._by_value.items())
        found += known_findings(text, found, held)
        protected = [
            (m.start(), m.end()) for m in PLACEHOLDER.finditer(text) if session.is_placeholder(m[0])
        ]
        starts = [ps for ps, _ in protected]
        chosen: list[Finding] = []
        end = -1
        for f in sorted(found, key=lambda f: (f.start, -(f.end - f.start))):
            if f.start < end or _overlaps(f, protected, starts):
                continue
            chosen.append(f)
            end = f.end
        if not chosen:
            return text
        out: list[str] = []
        pos = 0
        for f in chosen:
            out.append(text[pos : f.start])
            out.append(session.placeholder_for(f.category, f.value))
            pos = f.end
        out.append(text[pos:])
        self.replaced += len(chosen)
        return "".join(out)

    def apply_image(self, part: ImagePart, session: NeutralizationSession) -> ImagePart:
        """``part`` with the personal data in its text blacked out (OCR; see
        :mod:`nyla.ai.image_gate`); an image that cannot be checked is a failure."""
        if not self.neutralizers:
            return part
        source = part.data_base64 or part.url or ""
        key = (self._signature, hashlib.sha256(source.encode()).hexdigest())
        cached = session._images.get(key)
        if cached is not None:
            return cached
        errors_before = len(self.errors)
        result = neutralize_image(part, self.findings, lambda why: self._fail("image-ocr", why))
        if len(self.errors) == errors_before:  # an unchecked image is checked again next time
            if self._pinned is not session:
                self._pin(session)
            session._images[key] = result
        return result

    def apply_messages(
        self, messages: Iterable[Message], session: NeutralizationSession
    ) -> list[Message]:
        """``messages`` with every text neutralized (a message without personal data as it is)."""
        return self.prepare_messages(list(messages), session)[0]

    def prepare_messages(
        self, messages: list[Message], session: NeutralizationSession
    ) -> tuple[list[Message], int]:
        """``messages`` neutralized, and their estimated tokens (per-message overhead
        included, not the request's).

        Each message is neutralized and counted once per session: a call that extends the
        previous call of the same conversation (same first message) reuses its result for the
        common prefix (list comparison checks identity first: one C-level pass); any other
        call reuses what it can message by message. Messages are treated as immutable once
        sent (the conversation manager only appends).
        """
        if not messages:
            return [], 0
        with session.lock:
            return self._prepare(messages, session)

    def _prepare(
        self, messages: list[Message], session: NeutralizationSession
    ) -> tuple[list[Message], int]:
        key = id(messages[0])
        history = session._histories.get(key)
        if history is not None and (
            history.signature != self._signature or history.sources[0] is not messages[0]
        ):
            history = None
        if history is not None:
            n = len(history.sources)
            if len(messages) >= n and messages[:n] == history.sources:
                return self._extend(history, messages[n:], session, key)
        memo = history.memo() if history is not None else {}
        neutral, cumulative, complete = self._neutralize_all(messages, memo, 0, session)
        if complete:  # a partial result is never reused
            if self._pinned is not session:
                self._pin(session)
            history = _History(self._signature, list(messages), neutral, cumulative)
            self._remember(session, key, history)
        return list(neutral), cumulative[-1]

    def _extend(
        self, history: _History, added: list[Message], session: NeutralizationSession, key: int
    ) -> tuple[list[Message], int]:
        """A call that extends ``history``'s: only ``added`` is neutralized, and ``history`` grows
        in place (its lists are its own), not copied: a call costs what its new messages cost."""
        if added:
            neutral, cumulative, complete = self._neutralize_all(
                added, {}, history.cumulative[-1], session
            )
            if not complete:  # a partial result is never reused
                return history.neutral + neutral, cumulative[-1]
            history.sources += added
            history.neutral += neutral
            history.cumulative += cumulative
        self._remember(session, key, history)
        return list(history.neutral), history.cumulative[-1]

    def _neutralize_all(
        self, messages: list[Message], memo: _Memo, total: int, session: NeutralizationSession
    ) -> tuple[list[Message], list[int], bool]:
        """``messages`` neutralized (from ``memo`` where it holds the same message), the tokens
        so far after each (from ``total``), and whether every neutralizer succeeded."""
        errors_before = len(self.errors)
        neutral: list[Message] = []
        cumulative: list[int] = []
        for message in messages:
            hit = memo.get(id(message))
            if hit is not None and hit[0] is message:
                copy, tokens = hit[1], hit[2]
            else:
                copy = self._neutralize_message(message, session)
                tokens = message_tokens(copy)
            neutral.append(copy)
            total += tokens
            cumulative.append(total)
        return neutral, cumulative, len(self.errors) == errors_before

    @staticmethod
    def _remember(session: NeutralizationSession, key: int, history: _History) -> None:
        histories = session._histories
        histories.pop(key, None)
        if len(histories) >= MAX_HISTORIES:
            histories.pop(next(iter(histories)))
        histories[key] = history

    def _neutralize_message(self, message: Message, session: NeutralizationSession) -> Message:
        """One message neutralized (the message itself when nothing in it changed)."""
        source = message.content  # (each field read once: a model's attributes are slow)
        if isinstance(source, str):
            content: Any = self._apply_held(source, session)
            changed = content is not source and content != source
        else:
            content = [
                TextPart(text=self._apply_held(p.text, session))
                if isinstance(p, TextPart)
                else self.apply_image(p, session)
                for p in source
            ]
            changed = any(p != q for p, q in zip(content, source, strict=True))
        calls = message.tool_calls
        if calls:  # (a tool result, most messages of a run, has none)
            sources = [c.arguments for c in calls]
            arguments = [self._apply_held(a, session) for a in sources]
            if arguments != sources:
                calls = [
                    ToolCall(id=c.id, name=c.name, arguments=a)
                    for c, a in zip(calls, arguments, strict=True)
                ]
                changed = True
        if not changed:
            return message
        return message.model_copy(update={"content": content, "tool_calls": calls})


def _neutralizer_id(neutralizer: Any) -> Any:
    return getattr(neutralizer, "id", type(neutralizer).__name__)


def _overlaps(finding: Finding, spans: list[tuple[int, int]], starts: list[int]) -> bool:
    """Whether ``finding`` overlaps one of the sorted, disjoint ``spans`` (one bisection)."""
    i = bisect.bisect_left(starts, finding.end) - 1
    return i >= 0 and spans[i][1] > finding.start


#: what an image weighs in :func:`pending_chars`: reading it (OCR) takes a second, so a
#: call with an image not yet read neutralizes in a worker thread
IMAGE_CHARS = 1_000_000


def _message_chars(message: Message) -> int:
    content = message.content
    size = (
        len(content)
        if isinstance(content, str)
        else sum(len(p.text) if isinstance(p, TextPart) else IMAGE_CHARS for p in content)
    )
    return size + sum(len(c.arguments) for c in message.tool_calls)


def pending_chars(messages: list[Message], session: NeutralizationSession | None) -> int:
    """Characters of ``messages`` that ``session`` has not neutralized yet as the prefix of
    the same conversation (what the next :meth:`NeutralizationGate.prepare_messages` reads)."""
    reused = 0
    history = session._histories.get(id(messages[0])) if session and messages else None
    if history is not None and history.sources[0] is messages[0]:
        n = len(history.sources)
        if len(messages) >= n and messages[:n] == history.sources:
            reused = n
    return sum(_message_chars(m) for m in messages[reused:])


class StreamRestorer:
    """Re-personalizes streamed text whose placeholders may be split across deltas: text from
    an unclosed ``[`` on is held back until it can be decided."""

    MAX_HOLD = 32

    def __init__(self, session: NeutralizationSession) -> None:
        self.session = session
        self._buffer = ""

    def feed(self, text: str) -> str:
        """Take a delta; return the text that is safe to emit now."""
        self._buffer += text
        cut = self._buffer.rfind("[")
        if cut == -1 or "]" in self._buffer[cut:] or len(self._buffer) - cut > self.MAX_HOLD:
            ready, self._buffer = self._buffer, ""
        else:
            ready, self._buffer = self._buffer[:cut], self._buffer[cut:]
        return self.session.restore(ready)

    def flush(self) -> str:
        """Whatever is still held back, restored."""
        ready, self._buffer = self._buffer, ""
        return self.session.restore(ready)
