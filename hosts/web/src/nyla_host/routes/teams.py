"""The Teams bot's host part (the bot itself is the ``teamsbot`` feature plugin, reached
through the kernel's feature registry, never imported):

- ``POST /api/teams/messages`` — the bot's messaging endpoint in Azure. Public for nyla's
  authentication: the Bot Connector service's JWT is its credential, checked on every
  activity (401 and nothing runs when it does not hold).
- the operator's control panel: status, bindings (a Microsoft Entra tenant served for a
  mandate, the bot running as one nyla user), conversations with their transcript,
  persistent directives, and director prompts (one-shot: the agent answers in the chat now;
  persistent: kept and rendered into every answer).

Who may operate a binding: a sysadmin; a mandate admin of the binding's mandate; the nyla
user the bot runs as. Another binding's conversation or directive is answered 404.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from nyla import ConfigurationError
from nyla_host.auth import need_mandate_admin, need_user
from nyla_host.identity import Identity
from nyla_host.state import HostState, host
from nyla_host.teams_access import agent_access

router = APIRouter(prefix="/api/teams", tags=["teams"])
#: the largest activity the messaging endpoint reads
MAX_ACTIVITY_BYTES = 256 * 1024
#: the transcript lines the panel shows of a conversation
TRANSCRIPT_LINES = 50


class _Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class BindingIn(_Body):
    """A tenant to serve: the bot runs as ``userId`` in ``mandateId`` (default: the caller's)."""

    tenant_id: str = Field(alias="tenantId", min_length=1, max_length=64)
    user_id: str = Field(alias="userId", min_length=1, max_length=128)
    mandate_id: str | None = Field(default=None, alias="mandateId", max_length=128)


class DirectorIn(_Body):
    """A director prompt: ``persistent`` keeps it as a directive (for ``conversationId``, or
    with ``bindingId`` alone for every conversation of the binding); otherwise the agent runs
    on it now and answers in ``conversationId``."""

    prompt: str = Field(min_length=1, max_length=2000)
    persistent: bool = False
    conversation_id: str | None = Field(default=None, alias="conversationId", max_length=512)
    binding_id: str | None = Field(default=None, alias="bindingId", max_length=64)


def teams_bot(state: HostState) -> Any:
    """The bot over the host's kernel, opened on first use (404 without the plugin)."""
    bot = state.services.get("teams")
    if bot is None:
        try:
            feature = state.kernel.features.feature("teamsbot")
        except ConfigurationError as exc:
            raise HTTPException(
                404, "the Teams bot is not installed (nyla-feature-teamsbot)"
            ) from exc
        kernel = state.kernel
        bot = feature.open_bot(  # type: ignore[attr-defined]
            db=kernel.db,
            ai=kernel.ai,
            agent=kernel.agent,
            transport=state.settings.extra.get("teams_transport"),
            access=agent_access(kernel),
        )
        state.services["teams"] = bot
    return bot


def _may(bot: Any, binding: Any, who: Identity) -> bool:
    return bool(
        bot.may_operate(
            binding,
            who.user_id,
            who.mandate_id,
            mandate_admin=who.is_mandate_admin,
            sysadmin=who.is_sysadmin,
        )
    )


async def _bindings(bot: Any, who: Identity) -> list[Any]:
    return [b for b in await bot.store.bindings() if _may(bot, b, who)]


async def _conversation(bot: Any, conversation_id: str, who: Identity) -> tuple[Any, Any]:
    conversation = await bot.store.conversation(conversation_id)
    binding = await bot.store.binding(conversation.binding_id) if conversation else None
    if binding is None or not _may(bot, binding, who):
        raise HTTPException(404, "no such conversation")
    return conversation, binding


@router.post("/messages", include_in_schema=True)
async def messages(request: Request) -> JSONResponse:
    """The messaging endpoint: one activity from the Bot Connector service. A refused token
    is answered 401 without saying which check failed (the panel's status says)."""
    raw = await request.body()
    if len(raw) > MAX_ACTIVITY_BYTES:
        return JSONResponse({"detail": "the activity is too large"}, status_code=413)
    try:
        body = json.loads(raw)
    except ValueError:
        return JSONResponse({"detail": "the body is not JSON"}, status_code=400)
    bot = teams_bot(host(request))
    receipt = await bot.take(request.headers.get("authorization"), body)
    if receipt.status_code == 401:
        return JSONResponse(
            {"detail": "the Bot Connector service's token does not hold"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    if receipt.status_code != 200:
        return JSONResponse({"detail": receipt.reason}, status_code=receipt.status_code)
    return JSONResponse({"outcome": receipt.outcome})


@router.get("/status")
async def status(request: Request, who: Identity = Depends(need_user)) -> dict[str, Any]:
    """Whether the bot is configured, what is missing, and what it did since start."""
    bot = teams_bot(host(request))
    data = await bot.status()
    data["bindings"] = [b.to_wire() for b in await _bindings(bot, who)]
    if not who.is_sysadmin:
        data.pop("counts", None)  # the counts span every tenant
    if not who.is_mandate_admin:  # what failed may be another tenant's
        for key in ("sinceStart", "lastError", "lastRefusal", "pending"):
            data.pop(key, None)
    return data


@router.get("/bindings")
async def list_bindings(request: Request, who: Identity = Depends(need_user)) -> list[dict]:
    """The bindings the caller may operate."""
    return [b.to_wire() for b in await _bindings(teams_bot(host(request)), who)]


@router.post("/bindings", status_code=201)
async def add_binding(
    request: Request, body: BindingIn, who: Identity = Depends(need_mandate_admin)
) -> dict[str, Any]:
    """Serve a tenant for a mandate (a mandate admin binds for their own mandate only)."""
    mandate = body.mandate_id or who.mandate_id
    if mandate is None:
        raise HTTPException(422, "mandateId: the binding needs a mandate")
    if mandate != who.mandate_id and not who.is_sysadmin:
        raise HTTPException(403, "a mandate admin binds tenants for their own mandate only")
    try:
        binding = await teams_bot(host(request)).store.add_binding(
            body.tenant_id, mandate, body.user_id, who.user_id
        )
    except ValueError as exc:
        raise HTTPException(409, str(exc)) from exc
    return binding.to_wire()


@router.delete("/bindings/{binding_id}", status_code=204)
async def remove_binding(
    request: Request, binding_id: str, who: Identity = Depends(need_mandate_admin)
) -> None:
    """Stop serving a tenant (its directives go; its transcript stays)."""
    bot = teams_bot(host(request))
    binding = await bot.store.binding(binding_id)
    if binding is None or not _may(bot, binding, who):
        raise HTTPException(404, "no such binding")
    await bot.store.remove_binding(binding_id)


@router.get("/conversations")
async def conversations(request: Request, who: Identity = Depends(need_user)) -> list[dict]:
    """The conversations of the caller's bindings, most recently active first."""
    bot = teams_bot(host(request))
    ids = [b.id for b in await _bindings(bot, who)]
    return [c.to_wire() for c in await bot.store.conversations(ids)] if ids else []


@router.get("/conversations/{conversation_id:path}/messages")
async def transcript(
    request: Request, conversation_id: str, who: Identity = Depends(need_user)
) -> list[dict]:
    """A conversation's last messages, oldest first."""
    bot = teams_bot(host(request))
    conversation, _ = await _conversation(bot, conversation_id, who)
    return [line.to_wire() for line in await bot.store.recent(conversation.id, TRANSCRIPT_LINES)]


@router.get("/directives")
async def list_directives(
    request: Request, who: Identity = Depends(need_user), conversation_id: str | None = None
) -> list[dict]:
    """The persistent directives of the caller's bindings (those applying to one
    conversation with ``conversation_id``)."""
    bot = teams_bot(host(request))
    if conversation_id is not None:
        _, binding = await _conversation(bot, conversation_id, who)
        found = await bot.store.directives([binding.id], conversation_id)
    else:
        ids = [b.id for b in await _bindings(bot, who)]
        found = await bot.store.directives(ids) if ids else []
    return [d.to_wire() for d in found]


@router.delete("/directives/{directive_id}", status_code=204)
async def remove_directive(
    request: Request, directive_id: str, who: Identity = Depends(need_user)
) -> None:
    """Drop a persistent directive."""
    bot = teams_bot(host(request))
    directive = await bot.store.directive(directive_id)
    binding = await bot.store.binding(directive.binding_id) if directive else None
    if binding is None or not _may(bot, binding, who):
        raise HTTPException(404, "no such directive")
    await bot.store.remove_directive(directive_id)


@router.post("/director", status_code=202)
async def director(
    request: Request, body: DirectorIn, who: Identity = Depends(need_user)
) -> JSONResponse:
    """A director prompt: one-shot (202, the answer follows in the chat) or persistent
    (201, the directive)."""
    bot = teams_bot(host(request))
    conversation: Any = None
    binding: Any = None
    if body.conversation_id is not None:
        conversation, binding = await _conversation(bot, body.conversation_id, who)
    elif body.binding_id is not None and body.persistent:
        binding = await bot.store.binding(body.binding_id)
        if binding is None or not _may(bot, binding, who):
            raise HTTPException(404, "no such binding")
    else:
        raise HTTPException(422, "conversationId (or bindingId for a persistent directive)")
    try:
        if body.persistent:
            directive = await bot.add_directive(
                binding, body.prompt, who.user_id, body.conversation_id
            )
            return JSONResponse(directive.to_wire(), status_code=201)
        await bot.direct(conversation, body.prompt)
    except PermissionError as exc:
        raise HTTPException(403, str(exc)) from exc
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc
    return JSONResponse({"scheduled": True, "conversationId": conversation.id}, status_code=202)
