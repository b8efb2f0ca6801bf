"""How the bot answers: the fast path (one cheap model call that answers at once or asks for
the agent) and the agent run (the kernel's own ``agent.run``, the seed's configuration, no
tool set of the bot's own). Both see the operator's persistent directives as an
``OPERATOR_DIRECTIVES`` block and the conversation's recent transcript.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Protocol

from nyla.sdk import (
    AgentConfig,
    AiCallRequest,
    AiCallResponse,
    Message,
    ModelNotAvailableError,
    OperationType,
    RunContext,
)
from nyla.sdk import Role as MessageRole
from nyla_feature_teamsbot.store import Directive, Line

log = logging.getLogger(__name__)

#: the seed's configuration of a Teams agent run: five rounds, 0.10 CHF, the core and web
#: toolboxes, no action tools (the agent only produces text; the bot delivers it)
AGENT_CONFIG = AgentConfig(
    max_rounds=5,
    max_cost_chf=0.10,
    tool_set="core",
    initial_toolboxes=["core", "web"],
    exclude_action_tools=True,
)
#: what the fast path's one call may cost at most
FAST_PATH_BUDGET_CHF = 0.01
FAST_PATH_TOKENS = 600
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_MARKER = re.compile(r"operator[\s_-]*directives", re.IGNORECASE)
#: what the fast path's user message puts before the message to answer
MESSAGE_HEAD = "MESSAGE:"

FAST_PATH_PROMPT = """You are nyla, an assistant taking part in a Microsoft Teams {kind}.
Answer the last message briefly and in the language it was written in, when you can do so from
the conversation and general knowledge alone. When it needs research, documents, the web or
several steps, do not answer: hand it to the agent.
Reply with one JSON object and nothing else:
{{"needsAgent": false, "answer": "<your answer>"}}
or
{{"needsAgent": true, "agentReason": "<the task for the agent, in one or two sentences>"}}"""


class Ai(Protocol):
    """What the bot calls of the AI service (``kernel.ai``)."""

    async def call(self, request: AiCallRequest) -> AiCallResponse: ...


class Agent(Protocol):
    """What the bot calls of the agent runtime (``kernel.agent``)."""

    def run(
        self, prompt: str, config: AgentConfig | None = None, context: RunContext | None = None
    ) -> Any: ...


@dataclass(frozen=True)
class Context:
    """What an answer sees besides the message: the operator-directives block and the
    conversation's recent transcript (each ``""`` when there is none)."""

    directives: str = ""
    transcript: str = ""


@dataclass(frozen=True)
class Decision:
    """The fast path's verdict: an ``answer``, or ``needs_agent`` with the ``reason`` that
    becomes the agent's task brief."""

    answer: str | None
    needs_agent: bool
    reason: str | None = None
    cost_chf: float = 0.0


@dataclass(frozen=True)
class AgentOutcome:
    """What an agent run produced: the final text, its status and cost."""

    text: str
    status: str
    cost_chf: float
    run_id: str | None


def directives_block(directives: list[Directive]) -> str:
    """The operator's persistent directives as the block every answer's context carries."""
    if not directives:
        return ""
    lines = "\n".join(f"- {d.text}" for d in directives)
    return (
        "OPERATOR_DIRECTIVES (from the bot's operator; follow them in every answer):\n"
        f"{lines}\nEND_OPERATOR_DIRECTIVES"
    )


def quoted(text: str) -> str:
    """A participant's words with the operator block's marker made harmless: nobody in a
    chat can write a block that reads as the operator's."""
    return _MARKER.sub("operator-directives (quoted)", text)


def transcript_block(lines: list[Line]) -> str:
    """The conversation's recent messages, oldest first (participants' words quoted)."""
    if not lines:
        return ""
    said = "\n".join(
        f"[{line.sent_at:%Y-%m-%d %H:%M}] "
        + (
            f"nyla: {line.text}"
            if line.direction == "out"
            else f"{quoted(line.sender_name or 'someone')}: {quoted(line.text)}"
        )
        for line in lines
    )
    return f"CONVERSATION (most recent last):\n{said}"


async def fast_path(ai: Ai, message: str, kind: str, context: Context, run: RunContext) -> Decision:
    """One cheap model call (operation ``speechTeams``; a general model when none serves
    it): an answer, or ``needsAgent`` with a reason. Text that is no JSON is the answer.
    The operator's directives are in the system message; the participants' words (the
    transcript and the message) in the user message."""
    system = "\n\n".join(
        b for b in (FAST_PATH_PROMPT.format(kind=_kind_words(kind)), context.directives) if b
    )
    said = "\n\n".join(b for b in (context.transcript, f"{MESSAGE_HEAD}\n{quoted(message)}") if b)
    messages = [
        Message(role=MessageRole.SYSTEM, content=system),
        Message(role=MessageRole.USER, content=said),
    ]
    response = None
    for operation in (OperationType.SPEECH_TEAMS, OperationType.AGENT):
        request = AiCallRequest(
            operation=operation,
            messages=messages,
            context=run,
            max_cost_chf=FAST_PATH_BUDGET_CHF,
            max_output_tokens=FAST_PATH_TOKENS,
        )
        try:
            response = await ai.call(request)
            break
        except ModelNotAvailableError as exc:
            log.info("no model for the fast path's %s call: %s", operation.value, exc)
    if response is None:
        return Decision(None, True, message)
    return parse_decision(response.content or "", message, float(response.cost_chf or 0.0))


def parse_decision(text: str, message: str, cost_chf: float = 0.0) -> Decision:
    """The fast path's reply read: JSON with ``needsAgent``/``agentReason``/``answer``, or
    plain text taken as the answer; an empty answer hands the message to the agent."""
    found = _JSON_OBJECT.search(text)
    data: Any = None
    if found:
        try:
            data = json.loads(found.group(0))
        except ValueError:
            data = None
    if isinstance(data, dict):
        if data.get("needsAgent") is True:
            reason = str(data.get("agentReason") or data.get("reason") or "").strip()
            return Decision(None, True, reason or message, cost_chf)
        answer = str(data.get("answer") or "").strip()
    else:
        answer = text.strip()
    if not answer:
        return Decision(None, True, message, cost_chf)
    return Decision(answer, False, None, cost_chf)


def agent_brief(task: str, origin: str, message: str | None, context: Context) -> str:
    """The agent's prompt: the task, where it came from, the operator's directives, the
    message that led to it and the transcript (participants' words quoted)."""
    parts = [f"TASK ({origin}): {task}"]
    if context.directives:
        parts.append(context.directives)
    if message and message.strip() != task.strip():
        parts.append(f"The message in the chat: {quoted(message)}")
    if context.transcript:
        parts.append(context.transcript)
    parts.append("Write the answer the chat will see: plain, short, in the chat's language.")
    return "\n\n".join(parts)


async def run_agent(agent: Agent, brief: str, run: RunContext) -> AgentOutcome:
    """``agent.run`` with :data:`AGENT_CONFIG`; the FINAL text and the summary's figures."""
    text, status, cost, run_id = "", "error", 0.0, None
    async for event in agent.run(brief, AGENT_CONFIG, run):
        kind = getattr(event.type, "value", event.type)
        if kind == "FINAL":
            text = event.text
        elif kind == "AGENT_SUMMARY":
            status = str(event.data.get("status") or status)
            cost = float(event.data.get("costChf") or 0.0)
            run_id = event.data.get("runId")
    return AgentOutcome(text.strip(), status, cost, run_id)


def _kind_words(kind: str) -> str:
    return {
        "personal": "one-to-one chat",
        "groupChat": "group chat",
        "channel": "channel",
        "meeting": "meeting chat",
    }.get(kind, "chat")
