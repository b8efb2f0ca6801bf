"""The Teams bot: takes a signed activity, answers through the fast path or the agent, and
takes the operator's director prompts.

An activity is answered after the HTTP exchange that brought it (the channel wants its
answer within seconds; an agent run takes longer): :meth:`TeamsBot.receive` checks, records
and schedules; the answer goes out as a message activity through the Bot Connector service.
:meth:`TeamsBot.drain` waits for what is scheduled (tests, shutdown).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from nyla.sdk import RunContext
from nyla_feature_teamsbot import answering
from nyla_feature_teamsbot.activity import Activity, message_activity, workflow_id
from nyla_feature_teamsbot.auth import AuthError, ChannelAuth
from nyla_feature_teamsbot.connector import BotConnector, DeliveryError
from nyla_feature_teamsbot.settings import TeamsSettings
from nyla_feature_teamsbot.store import Binding, Conversation, Directive, TeamsStore

log = logging.getLogger(__name__)

FEATURE_CODE = "teamsbot"
#: what the chat sees when an agent run ends without an answer
NO_ANSWER = "I could not finish that this time ({status}). Please ask again or rephrase."
#: what the chat sees when the user the bot runs as may not use nyla's agent
NOT_ALLOWED = (
    "I cannot answer here: the nyla user this bot runs as may not use the agent "
    "(service.agent). Ask your nyla administrator."
)
#: the permission the bot asks for before it answers (the kernel's service access)
AGENT_PERMISSION = "service.agent"
MAX_DIRECTIVE_CHARS = 2000
#: persistent directives a binding keeps at most (each is in every answer's context)
MAX_DIRECTIVES = 50
#: the longest text one message carries (Teams takes about 28 KB per message)
MAX_MESSAGE_CHARS = 20_000
CUT_NOTE = "\n\n… (cut: the answer was longer than one Teams message holds)"
#: answers worked on at once in one process (more wait their turn: a busy meeting must not
#: start dozens of agent runs together)
MAX_CONCURRENT_ANSWERS = 8


#: asks the kernel's service access whether (user, mandate) may use a permission
Access = Callable[[str, "str | None", str], Awaitable[bool]]


class BadActivity(ValueError):
    """A body that is not an activity."""


@dataclass(frozen=True)
class Receipt:
    """What became of an incoming activity: ``accepted`` (an answer is on its way),
    ``duplicate``, ``unbound`` (its tenant is not served), ``recorded`` (a conversation
    update: the conversation is kept, nothing is answered), ``ignored`` (another type, or a
    message without words); ``refused`` and ``bad`` from :meth:`TeamsBot.take`."""

    outcome: str
    conversation_id: str | None = None
    reason: str | None = None

    @property
    def status_code(self) -> int:
        """The HTTP status a host answers with: 401 refused, 400 bad, 200 otherwise."""
        return {"refused": 401, "bad": 400}.get(self.outcome, 200)


def may_operate(
    binding: Binding, user_id: str, mandate_id: str | None, *, mandate_admin: bool, sysadmin: bool
) -> bool:
    """Who may see a binding's conversations and direct its bot: a sysadmin; a mandate admin
    of the binding's mandate; the nyla user the bot runs as (in that mandate)."""
    if sysadmin:
        return True
    if mandate_id != binding.mandate_id:
        return False
    return mandate_admin or user_id == binding.user_id


class TeamsBot:
    """The bot over the kernel's AI service and agent runtime (passed in, typed by what the
    bot calls of them), its store, the channel's token check and the Bot Connector client."""

    def __init__(
        self,
        store: TeamsStore,
        ai: answering.Ai,
        agent: answering.Agent,
        auth: ChannelAuth,
        connector: BotConnector,
        settings: TeamsSettings,
        access: Access | None = None,
    ) -> None:
        self.store = store
        self.access = access
        self.ai = ai
        self.agent = agent
        self.auth = auth
        self.connector = connector
        self.settings = settings
        self.stats: Counter[str] = Counter()
        self.last_error: str | None = None
        self.last_refusal: str | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(MAX_CONCURRENT_ANSWERS)

    #: who may see a binding's conversations and direct its bot (see :func:`may_operate`)
    may_operate = staticmethod(may_operate)

    # incoming ------------------------------------------------------------------------------

    async def take(self, authorization: str | None, body: Any) -> Receipt:
        """:meth:`receive` with its refusals as receipts (for a host that maps them to HTTP
        without importing the bot's exceptions): ``refused`` and ``bad`` carry the reason."""
        try:
            return await self.receive(authorization, body)
        except AuthError as exc:
            return Receipt("refused", reason=exc.reason)
        except BadActivity as exc:
            return Receipt("bad", reason=str(exc))

    async def receive(self, authorization: str | None, body: Any) -> Receipt:
        """Check and take one activity. :class:`BadActivity` for a body that is none,
        :class:`AuthError` when its token does not hold — then nothing is recorded or run."""
        try:
            activity = Activity.model_validate(body)
        except ValidationError as exc:
            raise BadActivity(f"not an activity: {exc.error_count()} problems") from exc
        try:
            await self.auth.verify(authorization, activity)
        except AuthError as exc:
            self.stats["refused"] += 1
            self.last_refusal = exc.reason
            log.info("Teams activity refused: %s", exc.reason)
            raise
        self.stats["received"] += 1
        if activity.type not in ("message", "conversationUpdate"):
            return Receipt("ignored", activity.conversation.id)
        binding = await self.store.binding_for_tenant(activity.tenant_id)
        if binding is None:
            self.stats["unbound"] += 1
            return Receipt("unbound", activity.conversation.id)
        if activity.type == "conversationUpdate":  # e.g. the bot added to a meeting
            await self.store.record_conversation(binding, activity)
            return Receipt("recorded", activity.conversation.id)
        text = activity.plain_text()
        if not text:
            return Receipt("ignored", activity.conversation.id)
        if not await self.store.record_incoming(binding, activity, text):
            return Receipt("duplicate", activity.conversation.id)
        self._spawn(self._answer(binding, activity, text))
        return Receipt("accepted", activity.conversation.id)

    async def _answer(self, binding: Binding, activity: Activity, text: str) -> None:
        conversation = await self.store.conversation(activity.conversation.id)
        assert conversation is not None  # recorded with the message
        if not await self.allowed(binding):
            await self.deliver(conversation, NOT_ALLOWED, "refusal", reply_to=activity.id)
            return
        context = await self.context(conversation, skip_last=True)
        run = self.run_context(binding, conversation.id)
        decision = await answering.fast_path(self.ai, text, conversation.kind, context, run)
        if decision.needs_agent:
            self.stats["escalated"] += 1
            await self.typing(conversation)
            brief = answering.agent_brief(
                decision.reason or text, "escalated from the fast path", text, context
            )
            reply, source = await self._agent_text(brief, run), "agent"
        else:
            self.stats["fastPath"] += 1
            reply, source = decision.answer or "", "fastPath"
        await self.deliver(conversation, reply, source, reply_to=activity.id)

    # director ------------------------------------------------------------------------------

    async def direct(self, conversation: Conversation, prompt: str, *, wait: bool = False) -> None:
        """A one-shot director prompt: the agent runs on it now (bypassing the fast path)
        and its answer goes into the conversation. ``wait`` returns once it is delivered."""
        prompt = _directive_text(prompt)
        binding = await self._binding(conversation)
        if not await self.allowed(binding):
            raise PermissionError(f"{binding.user_id} may not use the agent ({AGENT_PERMISSION})")
        work = self._direct(binding, conversation, prompt)
        if wait:
            await work
        else:
            self._spawn(work)

    async def _direct(self, binding: Binding, conversation: Conversation, prompt: str) -> None:
        self.stats["director"] += 1
        context = await self.context(conversation)
        brief = answering.agent_brief(prompt, "director prompt from the operator", None, context)
        text = await self._agent_text(brief, self.run_context(binding, conversation.id))
        await self.deliver(conversation, text, "director")

    async def add_directive(
        self, binding: Binding, text: str, by: str, conversation_id: str | None = None
    ) -> Directive:
        """Keep a persistent directive (for one conversation of the binding, or all)."""
        text = _directive_text(text)
        if len(await self.store.directives([binding.id])) >= MAX_DIRECTIVES:
            raise ValueError(f"a binding keeps at most {MAX_DIRECTIVES} directives")
        if conversation_id is not None:
            conversation = await self.store.conversation(conversation_id)
            if conversation is None or conversation.binding_id != binding.id:
                raise ValueError(f"conversation {conversation_id!r} is not one of this binding")
        return await self.store.add_directive(binding.id, text, by, conversation_id)

    # shared --------------------------------------------------------------------------------

    async def allowed(self, binding: Binding) -> bool:
        """Whether the user the bot runs as may use the agent (always, without a decider)."""
        if self.access is None:
            return True
        if await self.access(binding.user_id, binding.mandate_id, AGENT_PERMISSION):
            return True
        self.stats["notAllowed"] += 1
        return False

    async def context(
        self, conversation: Conversation, *, skip_last: bool = False
    ) -> answering.Context:
        """The operator-directives block and the recent transcript of a conversation."""
        found = await self.store.directives([conversation.binding_id], conversation.id)
        lines = await self.store.recent(conversation.id)
        if skip_last and lines:
            lines = lines[:-1]
        return answering.Context(
            answering.directives_block(found), answering.transcript_block(lines)
        )

    def run_context(self, binding: Binding, conversation_id: str) -> RunContext:
        """Whose run: the binding's user in its mandate, in the workflow
        ``teamsbot:{conversationId}`` (round memory per chat or meeting). No feature instance:
        that would switch the feature data toolbox on, and the bot brings no tools of its
        own (and one chat must not read another's transcript through it)."""
        return RunContext(
            user_id=binding.user_id,
            mandate_id=binding.mandate_id,
            workflow_id=workflow_id(conversation_id),
        )

    async def deliver(
        self, conversation: Conversation, text: str, source: str, *, reply_to: str | None = None
    ) -> str | None:
        """Send ``text`` into the conversation as a message activity and keep it."""
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[: MAX_MESSAGE_CHARS - len(CUT_NOTE)] + CUT_NOTE
        activity = message_activity(
            text, {"id": conversation.id}, bot=conversation.bot or None, reply_to_id=reply_to
        )
        sent = await self.connector.send(
            conversation.service_url, conversation.id, activity, reply_to=reply_to
        )
        self.stats["delivered"] += 1
        await self.store.record_outgoing(conversation, text, source, sent)
        return sent

    async def typing(self, conversation: Conversation) -> None:
        """Show "nyla is typing" in the chat while the agent works (a failure only logged:
        the answer matters, the indicator does not)."""
        activity = {"type": "typing", "conversation": {"id": conversation.id}}
        if conversation.bot:
            activity["from"] = conversation.bot
        try:
            await self.connector.send(conversation.service_url, conversation.id, activity)
        except DeliveryError as exc:
            log.info("typing indicator not sent: %s", exc)

    async def _agent_text(self, brief: str, run: RunContext) -> str:
        outcome = await answering.run_agent(self.agent, brief, run)
        self.stats["agentRuns"] += 1
        return outcome.text or NO_ANSWER.format(status=outcome.status)

    async def _binding(self, conversation: Conversation) -> Binding:
        binding = await self.store.binding(conversation.binding_id)
        if binding is None:
            raise ValueError(f"conversation {conversation.id!r} belongs to no binding any more")
        return binding

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(self._guarded(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            async with self._slots:
                await work
        except Exception as exc:  # an answer that fails must not take the bot down
            self.stats["failed"] += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("Teams answer failed: %s", self.last_error)
        finally:
            work.close()  # cancelled before its turn: the coroutine was never started

    async def drain(self) -> None:
        """Wait until every scheduled answer is delivered (or failed)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def status(self) -> dict[str, Any]:
        """Configured or not (and what is missing), the stored counts, what happened since
        start, the last failure."""
        return {
            "configured": self.settings.configured,
            "missing": self.settings.missing(),
            "appId": self.settings.app_id,
            "counts": await self.store.counts(),
            "sinceStart": dict(self.stats),
            "lastError": self.last_error,
            "lastRefusal": self.last_refusal,
            "pending": len(self._tasks),
        }

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Let what is scheduled finish (``timeout_s`` at most, then it is cancelled: an
        answer cut short is not sent), then close the HTTP client."""
        if self._tasks:
            _, late = await asyncio.wait(list(self._tasks), timeout=timeout_s)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        await self.connector.http.aclose()


def _directive_text(text: str) -> str:
    text = " ".join((text or "").split())
    if not text:
        raise ValueError("a director prompt needs words")
    if len(text) > MAX_DIRECTIVE_CHARS:
        raise ValueError(f"a director prompt has at most {MAX_DIRECTIVE_CHARS} characters")
    return text
