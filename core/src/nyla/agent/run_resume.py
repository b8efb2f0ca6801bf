"""Running an ``interrupted`` durable run again, for the web host
(``POST /api/runs/{id}/resume``) and the CLI (``nyla runs resume``) alike.

A run is resumed as a new run in the same conversation, with the same config, going on after
the rounds it completed (their tools are not called again, :mod:`nyla.agent.run_rounds`).
The writes it left unfinished (tool calls that started without a result) may or may not have
taken effect, so resuming needs the caller's consent for them. The caller's account applies
as it is now: what it gave the run then (connections, model allow-list, denied services) is
left out of the resumed run's context and filled in again by ``agent.user_context``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nyla.agent.durable import DurableRuns
    from nyla.agent.run_tables import StoredRun
    from nyla.models.agent import AgentConfig, RunContext
    from nyla.models.ai import Message

_OWNER = "SELECT user_id, status, prompt FROM host_runs WHERE run_id = %s"


class RunNotFound(LookupError):
    """No such run for this caller."""


class NotYourRun(RunNotFound):
    """The run exists but belongs to another user (a host answers it as not found)."""


class RunNotResumable(ValueError):
    """Only an ``interrupted`` run (of a conversation) can be run again."""


class UnfinishedWrites(ValueError):
    """The interrupted run started writes that may or may not have taken effect: running it
    again needs the caller's consent (``confirmWrites``)."""

    def __init__(self, writes: list[dict[str, Any]]) -> None:
        names = ", ".join(f"{w.get('toolName')} (call {w.get('callId')})" for w in writes)
        super().__init__(
            f"the interrupted run started writes that may or may not have taken effect: "
            f"{names}; check them, then resume with confirmWrites"
        )
        self.writes = writes


@dataclass(frozen=True)
class Resumption:
    """What running the interrupted run ``run_id`` again takes."""

    run_id: str
    #: the prompt as its user wrote it (what the conversation shows)
    shown_prompt: str
    #: what the agent read (the prompt with its attached files named)
    agent_text: str
    config: AgentConfig
    #: the run's context as stored (with what the account gave it then)
    context: RunContext
    #: the rounds it completed
    continued: list[Message]

    @property
    def conversation_id(self) -> str:
        """The conversation the resumed run goes on in."""
        return str(self.context.workflow_id)

    def base_context(self) -> RunContext:
        """The run's identity, conversation and feature, without what the user's account
        gave it then (``agent.user_context`` fills that in again, as the account is now)."""
        return self.context.model_copy(
            update={
                "connections": [],
                "allowed_models": None,
                "denied_services": [],
                "run_id": None,
            }
        )


async def resumption(
    runs: DurableRuns,
    run_id: str,
    *,
    user_id: str,
    any_user: bool = False,
    confirm_writes: bool = False,
) -> Resumption:
    """What resuming run ``run_id`` for ``user_id`` takes (``any_user``: a sysadmin may
    resume anyone's run). Raises :class:`RunNotFound` (:class:`NotYourRun` for another
    user's run), :class:`RunNotResumable` for a run that did not end ``interrupted`` or has
    no conversation, :class:`UnfinishedWrites` while its unfinished writes are not
    confirmed."""
    rows = await runs.db.read_driver(lambda conn: conn.rows(_OWNER, (run_id,)))
    if not rows:
        raise RunNotFound(run_id)
    owner, status, shown_prompt = rows[0]
    if owner != user_id and not any_user:
        raise NotYourRun(run_id)
    found = await runs.interruption(run_id)
    if found is None or not found[2].workflow_id:
        raise RunNotResumable(
            f"run {run_id} is {status}: only an interrupted run of a conversation can be resumed"
        )
    prompt, config, context, writes, rounds = found
    if writes and not confirm_writes:
        raise UnfinishedWrites(writes)
    return Resumption(run_id, str(shown_prompt), prompt, config, context, rounds)


async def record_resumed(runs: DurableRuns, again: Resumption, context: RunContext) -> StoredRun:
    """Record the resumed run (``context``: its caller's, prepared by
    ``agent.user_context``): its prompt into the conversation first, then its row, ready
    for ``runs.launch``."""
    workflows = runs.conversations
    workflow = await workflows.load(again.conversation_id, context)
    row_id = uuid.uuid4().hex
    await workflows.add_turn(
        workflow, role="user", status="prompt", text=again.shown_prompt, run_id=row_id
    )
    return await runs.create(
        again.agent_text,
        again.config,
        context,
        shown_prompt=again.shown_prompt,
        run_id=row_id,
        continued=again.continued,
    )
