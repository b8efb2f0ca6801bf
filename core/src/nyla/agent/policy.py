"""The ``nyla_before_tool_call`` policy hook, asked the same way on every path a call comes
by: an agent's tool call (:class:`~nyla.agent.registry.ToolRegistry`), and an action run by
REST or by a workflow (:class:`~nyla.actions.executor.ActionExecutor`)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

from nyla.models.tools import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from nyla.agent.ports import AgentPlugins

log = logging.getLogger("nyla.agent.registry")

BeforeCallHook = Callable[[Tool, dict[str, Any], ToolContext], Any]

#: how a plugin manager calls implementations when no one monitors its hook calls
_PLUGGY_DEFAULT_HOOKEXEC = getattr(pluggy.PluginManager("nyla-probe"), "_inner_hookexec", None)


async def check_policy(
    before_call: BeforeCallHook | None, tool: Tool, arguments: dict[str, Any], ctx: ToolContext
) -> ToolResult | None:
    """The first denial of the ``nyla_before_tool_call`` answers, or ``None`` to allow.

    pluggy returns one answer per implementation; an ``async def`` implementation's answer
    is a coroutine, awaited here. Every implementation is consulted (audit hooks see every
    call), then the first denial in hook order wins. A policy that raises denies.
    """
    if before_call is None:
        return None
    try:
        answers = before_call(tool, arguments, ctx)
        if not answers:  # every policy allowed (the common case: nothing to settle)
            return None
    except Exception as exc:
        return policy_failed(tool, exc)
    return await first_denial(answers, tool)


def policy_failed(tool: Tool, exc: Exception) -> ToolResult:
    """The denial of a policy check that raised (a broken policy plugin fails closed)."""
    log.warning("before_tool_call for %s raised: %s", tool.name, exc)
    return ToolResult.fail(f"the policy check for {tool.name} failed: {exc}", "DENIED")


async def first_denial(answers: Any, tool: Tool) -> ToolResult | None:
    """The first denial among the hook's ``answers`` (what ``before_call`` returned, not
    empty), each awaitable awaited; ``None`` to allow. The second half of
    :func:`check_policy`, for a caller that has called the hook itself and found answers
    (with none, the call is allowed and no coroutine is needed: ~2.5k instructions less)."""
    try:
        if inspect.isawaitable(answers):
            answers = await answers
        if answers is None or isinstance(answers, ToolResult):
            answers = [answers]
        settled = await _settle(list(answers))
    except Exception as exc:  # a broken policy plugin denies (fails closed) and says why
        return policy_failed(tool, exc)
    for answer in settled:
        if answer is None:
            continue
        if isinstance(answer, ToolResult):
            if answer.error_details is None:
                return ToolResult.fail(answer.error or "denied by policy", "DENIED")
            return answer
        return ToolResult.fail(str(answer), "DENIED")
    return None


async def _settle(answers: list[Any]) -> list[Any]:
    """The answers with every awaitable awaited in order; after a failure the coroutines not
    yet awaited are closed (no "never awaited" warnings) and the failure is raised."""
    settled: list[Any] = []
    for index, answer in enumerate(answers):
        try:
            settled.append(await answer if inspect.isawaitable(answer) else answer)
        except BaseException:
            for rest in answers[index + 1 :]:
                if inspect.iscoroutine(rest):
                    rest.close()
            raise
    return settled


def before_call_hook(plugins: AgentPlugins) -> BeforeCallHook | None:
    """The plugins' ``nyla_before_tool_call`` hook (``None`` without plugins).

    The implementations registered now are called directly, in pluggy's order and with
    pluggy's answers (every implementation, ``None`` answers left out): going through
    pluggy's caller costs more than the three policies the toolboxes ship, on every tool
    call. With a wrapper among them, or hook monitoring on, pluggy calls them."""
    try:
        pm = plugins.pm
        hook = pm.hook.nyla_before_tool_call
    except Exception:
        return None
    impls = hook.get_hookimpls()
    if not impls:
        return None
    order = ("tool", "arguments", "context")
    direct = getattr(pm, "_inner_hookexec", None) is _PLUGGY_DEFAULT_HOOKEXEC and all(
        not (i.hookwrapper or i.wrapper or i.kwargnames) and set(i.argnames) <= set(order)
        for i in impls
    )
    if not direct:
        return lambda tool, arguments, context: hook(
            tool=tool, arguments=arguments, context=context
        )
    # (``None``: the implementation takes all three in the hook's order, as every one shipped
    # does: called with them as they are, not with a list of picks made per call)
    calls = [
        (i.function, None if tuple(i.argnames) == order else tuple(map(order.index, i.argnames)))
        for i in reversed(impls)
    ]

    def call(tool: Tool, arguments: dict[str, Any], context: ToolContext) -> list[Any]:
        answers = []
        for function, picks in calls:
            if picks is None:
                answer = function(tool, arguments, context)
            else:
                given = (tool, arguments, context)
                answer = function(*[given[i] for i in picks])
            if answer is not None:
                answers.append(answer)
        return answers

    return call
