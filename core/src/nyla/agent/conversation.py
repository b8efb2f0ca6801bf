"""The conversation manager: system prompt with the temporal block, the message list, token
tracking against the model's window, and progressive summarization.

Messages are grouped into *units* that are kept or summarized whole: an assistant message
with tool calls together with the tool results answering it (providers reject an orphaned
tool result), or a single user / assistant message. When the conversation nears the window,
the older units are summarized through the AI service (operation ``dataAnalyse``); the system
prompt, the task, the latest units and units whose results are still referenced later stay.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nyla.ai.tokens import REQUEST_OVERHEAD, count_tokens, message_tokens
from nyla.models.ai import AiCallResponse, Message, Role, ToolCall

if TYPE_CHECKING:
    from nyla.ai.service import AiService

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are nyla, a careful assistant that solves the user's task with the tools you have. "
    "Call tools when you need information or must change something; call independent "
    "read-only tools together in one turn. When a tool returns an error with errorDetails, "
    "fix the call as the suggestion says. When the task is done, answer in plain text "
    "without calling tools."
)

#: Share of the context window at which older turns are summarized.
SUMMARIZE_AT = 0.75
#: Units always kept verbatim at the end of the conversation.
KEEP_LATEST_UNITS = 4

_REF = re.compile(
    r"docItem:[\w-]+|docList:[\w:.-]+|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
)


#: Message's own validator (what ``Message(...)`` runs), looked up once (see tool_message)
_validate_message: Callable[[dict[str, Any]], Message] = (
    Message.__pydantic_validator__.validate_python
)


def tool_message(call: ToolCall, text: str) -> Message:
    """The conversation's message of ``call``'s result ``text``: ``Message(role=TOOL, ...)``
    validated by Message's validator directly (as ``model_validate`` does), once per tool
    call: the Python ``__init__`` and keyword packing were a fifth of its cost."""
    return _validate_message(
        {"role": Role.TOOL, "content": text, "tool_call_id": call.id, "name": call.name}
    )


def said(response: AiCallResponse) -> Message:
    """The model's answer as the conversation keeps it: ``Message(role=ASSISTANT, ...)``
    validated by Message's validator directly, as :func:`tool_message` makes a result's (the
    same validation, without ``__init__``'s keyword packing: 15.8k -> 12.6k instructions)."""
    return _validate_message(
        {"role": Role.ASSISTANT, "content": response.content, "tool_calls": response.tool_calls}
    )


def token_counter(ai: AiService, model_id: Callable[[], str | None]) -> TokenCounter:
    """The AI service's token counter for a run's model: :func:`nyla.ai.tokens.count_tokens`
    itself when the service counts with it (its stock method, which counts alike for every
    model), so the conversation counts a message without the service's frames (~2-3k
    instructions a message); any other counter is asked with the model's id."""
    from nyla.ai.service import AiService

    count = ai.count_tokens
    if getattr(count, "__func__", None) is AiService.count_tokens:
        return count_tokens
    return lambda messages: count(messages, model_id())


def resolve_timezone(name: str | None) -> ZoneInfo:
    """The user's IANA zone; UTC when missing or invalid (never the server's zone)."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            log.info("invalid timezone %r, using UTC", name)
    return ZoneInfo("UTC")


def temporal_block(timezone: str | None, now: datetime | None = None) -> str:
    """The date/time block of the system prompt, in the user's timezone."""
    zone = resolve_timezone(timezone)
    local = (now or datetime.now(UTC)).astimezone(zone)
    offset = local.strftime("%z")
    offset = f"{offset[:3]}:{offset[3:]}" if offset else "+00:00"
    return (
        "Current date and time: "
        f"{local.strftime('%A, %Y-%m-%d %H:%M')} ({zone.key}, UTC{offset}). "
        "Resolve relative dates (today, last month, Q1) against this date."
    )


def build_system_prompt(base: str | None, timezone: str | None, now: datetime | None = None) -> str:
    """The system prompt: ``base`` (or the default) and the temporal block."""
    return f"{base or DEFAULT_SYSTEM_PROMPT}\n\n{temporal_block(timezone, now)}"


def estimate_tokens(messages: list[Message]) -> int:
    """A provider-neutral token estimate (4 characters per token, 4 tokens per message)."""
    chars = 0
    for m in messages:
        chars += len(m.text) + sum(len(c.name) + len(c.arguments) for c in m.tool_calls)
    return chars // 4 + 4 * len(messages)


def units_of(messages: list[Message]) -> list[list[Message]]:
    """Messages grouped so that a tool call and its results are never split."""
    units: list[list[Message]] = []
    for m in messages:
        if (
            m.role is Role.TOOL
            and units
            and (units[-1][0].role is Role.ASSISTANT and units[-1][0].tool_calls)
        ):
            units[-1].append(m)
        else:
            units.append([m])
    return units


def _render(unit: list[Message]) -> str:
    parts = []
    for m in unit:
        if m.tool_calls:
            calls = "; ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
            parts.append(f"[assistant called] {calls}" + (f" — {m.text}" if m.text else ""))
        elif m.role is Role.TOOL:
            parts.append(f"[result of {m.name or m.tool_call_id}] {m.text}")
        else:
            parts.append(f"[{m.role.value}] {m.text}")
    return "\n".join(parts)


Summarizer = Callable[[str], Awaitable[str]]
TokenCounter = Callable[[list[Message]], int]


class ConversationManager:
    """The messages of one run and their upkeep.

    ``messages[0]`` is the system prompt, then the ``history`` of the conversation the run
    continues (earlier prompts and answers), then the user's task; these stay verbatim. A
    knowledge context (RAG block) is held apart and inserted after the system prompt for each
    call only.
    """

    def __init__(
        self,
        system_prompt: str,
        prompt: str,
        *,
        history: list[Message] | None = None,
        continued: list[Message] | None = None,
        count_tokens: TokenCounter = estimate_tokens,
    ) -> None:
        self.messages: list[Message] = [
            Message(role=Role.SYSTEM, content=system_prompt),
            *(history or []),
            Message(role=Role.USER, content=prompt),
        ]
        #: the system prompt, the history and the task: never summarized
        self.head = len(self.messages)
        self.messages += continued or []  # an interrupted run's rounds: as if played here
        self.count_tokens = count_tokens
        self.summaries = 0
        self._knowledge = ""
        self._knowledge_message: Message | None = None
        self._knowledge_tokens = 0
        # running total of self.messages, each message counted once when added
        self._total = sum(self._message_tokens(m) for m in self.messages)

    @property
    def knowledge_context(self) -> str:
        """The knowledge store's block for the next calls ('' for none)."""
        return self._knowledge

    @knowledge_context.setter
    def knowledge_context(self, text: str) -> None:
        if text == self._knowledge:
            return  # the same block object keeps the next call's prefix identical
        self._knowledge = text
        if not text:
            self._knowledge_message, self._knowledge_tokens = None, 0
            return
        self._knowledge_message = Message(
            role=Role.SYSTEM,
            content="Context from the knowledge store (may be incomplete):\n" + text,
        )
        self._knowledge_tokens = self._message_tokens(self._knowledge_message)

    def for_call(self) -> list[Message]:
        """The messages of the next model call (with the current knowledge context)."""
        if self._knowledge_message is None:
            return list(self.messages)
        return [self.messages[0], self._knowledge_message, *self.messages[1:]]

    def add(self, message: Message) -> None:
        """Append a message (messages are never changed once added)."""
        self.messages.append(message)
        if self.count_tokens is count_tokens and type(message) is Message:
            try:  # :meth:`_message_tokens` of the stock counter, without its frame (5 a round)
                self._total += REQUEST_OVERHEAD + message_tokens(message)
                return
            except Exception:  # counted as _message_tokens counts it when it fails
                pass
        self._total += self._message_tokens(message)

    def _message_tokens(self, message: Message) -> int:
        try:
            if self.count_tokens is count_tokens and isinstance(message, Message):
                # the stock counter's rule for a list of one message, without its frames
                return REQUEST_OVERHEAD + message_tokens(message)
            return int(self.count_tokens([message]))
        except Exception:  # a counter that fails must not stop the run
            return estimate_tokens([message])

    def tokens(self) -> int:
        """Tokens of the next call's messages (kept as a running total, not re-counted)."""
        return self._total + self._knowledge_tokens

    def needs_summary(self, context_window: int | None, reserve: int = 0) -> bool:
        """Whether the conversation is near the window (``reserve`` = the answer's tokens)."""
        if not context_window:
            return False
        return self.tokens() + reserve > SUMMARIZE_AT * context_window

    def split_for_summary(self) -> tuple[list[list[Message]], list[list[Message]]]:
        """(units to summarize, units to keep) of the part after the system prompt, history
        and task."""
        units = units_of(self.messages[self.head :])
        if len(units) <= KEEP_LATEST_UNITS:
            return [], units
        older, latest = units[:-KEEP_LATEST_UNITS], units[-KEEP_LATEST_UNITS:]
        later_text = "\n".join(
            m.text + " ".join(c.arguments for c in m.tool_calls) for u in latest for m in u
        )
        summarize: list[list[Message]] = []
        keep_older: list[list[Message]] = []
        for unit in older:
            refs = {r for m in unit if m.role is Role.TOOL for r in _REF.findall(m.text)}
            if refs and any(r in later_text for r in refs):
                keep_older.append(unit)  # a result the latest turns still refer to
            else:
                summarize.append(unit)
        return summarize, keep_older + latest

    async def summarize(self, summarizer: Summarizer) -> bool:
        """Replace the older units by one summary message; False when nothing to do."""
        old, keep = self.split_for_summary()
        if not old:
            return False
        transcript = "\n\n".join(_render(u) for u in old)
        summary = await summarizer(transcript)
        note = Message(
            role=Role.USER,
            content="Summary of the earlier part of this conversation (tool calls and their "
            f"results):\n{summary}",
        )
        self.messages = [*self.messages[: self.head], note, *(m for u in keep for m in u)]
        self._total = sum(self._message_tokens(m) for m in self.messages)
        self.summaries += 1
        return True


def summary_request_messages(transcript: str) -> list[Message]:
    """The messages of a summarization call over ``transcript``."""
    return [
        Message(
            role=Role.SYSTEM,
            content="Summarize this part of an agent's conversation for the agent itself. "
            "Keep every fact, number, id (file ids, docItem references), decision and open "
            "question it will need; drop chatter. Be concise.",
        ),
        Message(role=Role.USER, content=transcript),
    ]


def progress_request(status: str) -> Message:
    """The last user message asking for a progress summary when a run stops early."""
    why = {
        "maxRoundsReached": "You have used all the rounds allowed for this task.",
        "budgetExceeded": "The cost budget for this task is used up.",
    }.get(status, "The run has to stop now.")
    return Message(
        role=Role.USER,
        content=f"{why} Do not call tools. Write a short progress report for the user: what "
        "you found or did so far (with the concrete results), what is still open, and what "
        "the next step would be.",
    )


def local_progress_summary(status: str, prompt: str, tool_lines: list[str], last_text: str) -> str:
    """A progress report built from the trace when no model call is possible any more."""
    why = "round limit reached" if status == "maxRoundsReached" else "budget exhausted"
    lines = [f"Stopped before finishing ({why}). Task: {prompt.strip()[:300]}"]
    if tool_lines:
        lines.append(f"Done so far ({len(tool_lines)} tool calls):")
        lines.extend(f"- {line}" for line in tool_lines[-15:])
    if last_text:
        lines.append(f"Last note: {last_text.strip()[:500]}")
    lines.append("Open: the task is not complete; continue with a larger limit.")
    return "\n".join(lines)


def compact_json(value: object) -> str:
    """Short JSON for progress lines."""
    return json.dumps(value, ensure_ascii=False, default=str)[:200]
