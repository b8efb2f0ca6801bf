"""The harness self-test: scripted policies, selectable as model ids
``eval:reference-replay``, ``eval:trap-regression`` and ``eval:trap-no-repair``.

They measure the harness, the validator and the repair loop, never a model: each looks a
question up by its exact text and replays that question's reference tool calls, so it can
only answer questions that have a ``solution`` script (questions tagged ``unscripted`` have
none, and a replay scores nothing on them). They have no price and report no usage, so a
self-test report shows no cost.

A policy reads the conversation like a model would — the question, its earlier tool calls and
their results (including the validator's ``errorDetails``) — and decides the next tool call or
the final answer. It follows the question's reference ``solution`` (tool calls, and how the
answer is read from their results) and computes its answer from the *actual* tool results, so
wrong tools give wrong numbers.

- ``reference-replay``: the reference solution straight away.
- ``trap-regression``: first falls into the question's trap — sums a balance
  (``trap:sum-balance``), forgets the period filter (``trap:period``), or uses camelCase field
  names (``trap:field``) — then repairs from the validator's suggestion. Without a validator
  the trap's (wrong) result becomes the answer.
- ``trap-no-repair``: falls into the trap and gives up when the validator rejects it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator, Container
from dataclasses import dataclass
from typing import Any, Protocol

from nyla.hookspecs import hookimpl
from nyla.models.ai import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    Role,
    StreamDelta,
    ToolCall,
    WebSearchHit,
)
from nyla.models.feature import BenchmarkQuestion

PROVIDER_ID = "eval"
POLICIES: dict[str, str] = {
    "reference-replay": "replays each question's reference solution",
    "trap-regression": "falls into the question's trap, then repairs from the validator's hint",
    "trap-no-repair": "falls into the question's trap and gives up when rejected",
}
_BALANCE = re.compile(r"(_balance|_total)$")
_TEMPLATE = re.compile(r"\{\{\s*steps\.(\d+)\.rows\.(\d+)\.(\w+)\s*\}\}")


@dataclass
class _Done:
    call: ToolCall
    result: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.result.get("success", True) is not False and "rows" in self.result


def _parse(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return {"success": False, "error": text}
    return value if isinstance(value, dict) else {"success": False, "error": text}


def _history(request: ChatRequest) -> list[_Done]:
    results = {m.tool_call_id: m.text for m in request.messages if m.role == Role.TOOL}
    done = []
    for m in request.messages:
        if m.role == Role.ASSISTANT:
            for call in m.tool_calls:
                if call.id in results:
                    done.append(_Done(call, _parse(results[call.id])))
    return done


def _question_text(request: ChatRequest) -> str:
    users = [m for m in request.messages if m.role == Role.USER]
    return users[0].text.strip() if users else ""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _fill(value: Any, results: list[dict[str, Any]]) -> Any:
    """Replace ``{{steps.N.rows.M.field}}`` with values from earlier results."""
    if isinstance(value, str):
        match = _TEMPLATE.fullmatch(value.strip())
        if match:
            step, row, name = int(match[1]), int(match[2]), match[3]
            try:
                return results[step]["rows"][row][name]
            except (IndexError, KeyError):
                return None
        return value
    if isinstance(value, list):
        return [_fill(v, results) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, results) for k, v in value.items()}
    return value


def evaluate_answer(spec: dict[str, Any], results: list[dict[str, Any]]) -> list[float]:
    """The numbers an answer spec (``sum`` / ``value`` / ``values`` / ``first`` / ``diff`` /
    ``list``) reads from the tool results."""
    if "list" in spec:
        return [n for item in spec["list"] for n in evaluate_answer(item, results)]
    if "diff" in spec:
        a, b = (evaluate_answer(s, results)[0] for s in spec["diff"])
        return [round(a - b, 2)]
    kind, args = next(iter(spec.items()))
    rows = results[args["step"]].get("rows", []) if args["step"] < len(results) else []
    where = args.get("where", {})
    rows = [r for r in rows if all(str(r.get(k)) == str(v) for k, v in where.items())]
    if kind == "value":
        return [float(rows[0]["value"] or 0)] if rows else [0.0]
    if kind == "sum":
        return [round(sum(float(r.get(args["field"]) or 0) for r in rows), 2)]
    if kind == "values":
        return [float(r[args["field"]]) for r in rows]
    if kind == "first":
        return [float(rows[0][args["field"]])] if rows else []
    raise ValueError(f"unknown answer spec {kind!r}")


def _format(numbers: list[float]) -> str:
    return "Answer: " + "; ".join(f"{n:.2f}" for n in numbers)


class Policy:
    """One scripted behaviour over a set of questions."""

    def __init__(self, name: str, questions: list[BenchmarkQuestion]) -> None:
        if name not in POLICIES:
            raise ValueError(f"unknown eval policy {name!r} (known: {', '.join(POLICIES)})")
        self.name = name
        self.questions = {q.question.strip(): q for q in questions}

    def trap(self, q: BenchmarkQuestion, golden: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The wrong first call this policy makes for ``q`` (``None``: no trap)."""
        if self.name == "reference-replay" or not golden:
            return None
        first = copy.deepcopy(golden[0])
        args = first["arguments"]
        filters = args.get("filters", [])
        if "trap:sum-balance" in q.tags:
            target = next((f for f in args.get("fields", []) if _BALANCE.search(f)), None)
            if target is None:
                return None
            return {
                "tool": "aggregateTable",
                "arguments": {
                    "table": args["table"],
                    "function": "SUM",
                    "field": target,
                    "filters": [f for f in filters if f["field"] != "period"],
                },
            }
        if "trap:period" in q.tags:
            args["filters"] = [f for f in filters if f["field"] != "period"]
            return first
        if "trap:field" in q.tags:
            for f in filters:
                f["field"] = _camel(f["field"])
            return first
        return None

    def decide(self, request: ChatRequest) -> ChatResponse:
        """The next move: a tool call or the final answer."""
        q = self.questions.get(_question_text(request))
        solution = getattr(q, "solution", None) if q is not None else None
        if q is None or not solution:
            return ChatResponse(
                content="I have no reference for this question.", finish_reason="stop"
            )
        golden = solution["steps"]
        history = _history(request)
        trap = self.trap(q, golden)
        traps = [h for h in history if h.call.id.startswith("trap")]
        gold = [h for h in history if h.call.id.startswith("gold")]
        if trap is not None and not traps:
            return _call("trap-0", trap)
        if traps and not gold:
            last = traps[-1].result
            if traps[-1].ok:  # no validator stopped it: the wrong figure becomes the answer
                rows = last["rows"]
                if rows and "value" in rows[0]:
                    return _answer([float(rows[0]["value"] or 0)])
                return _answer(evaluate_answer(solution["answer"], [last, last]))
            details = last.get("errorDetails") or {}
            if self.name == "trap-no-repair" or not details.get("code"):
                return _answer_text(f"I could not get the figure: {last.get('error')}")
            fixable = details.get("code") == "FIELD_NOT_FOUND" and details.get("suggestion")
            if trap is not None and fixable:
                repaired = copy.deepcopy(trap)
                for f in repaired["arguments"].get("filters", []):
                    if f["field"] == details.get("field"):
                        f["field"] = details["suggestion"]
                return _call("gold-0", repaired)
        k = len(gold)
        if gold and not gold[-1].ok:
            return _answer_text(f"The query failed: {gold[-1].result.get('error')}")
        results = [h.result for h in gold]
        if k < len(golden):
            step = {"tool": golden[k]["tool"], "arguments": _fill(golden[k]["arguments"], results)}
            return _call(f"gold-{k}", step)
        return _answer(evaluate_answer(solution["answer"], results))


def _call(call_id: str, step: dict[str, Any]) -> ChatResponse:
    call = ToolCall(id=call_id, name=step["tool"], arguments=json.dumps(step["arguments"]))
    return ChatResponse(tool_calls=[call], finish_reason="tool_calls")


def _answer(numbers: list[float]) -> ChatResponse:
    return _answer_text(_format(numbers))


def _answer_text(text: str) -> ChatResponse:
    return ChatResponse(content=text, finish_reason="stop")


class EvalPolicyProvider:
    """A provider whose models are the scripted policies (``eval:<policy>``)."""

    id = PROVIDER_ID

    def __init__(self, questions: list[BenchmarkQuestion]) -> None:
        self.policies = {name: Policy(name, questions) for name in POLICIES}

    def models(self) -> list[ModelSpec]:
        return [
            ModelSpec(
                id=f"{PROVIDER_ID}:{name}",
                provider=PROVIDER_ID,
                name=name,
                operation_types=[OperationType.AGENT, OperationType.DATA_ANALYSE],
                context_window=128_000,
                max_output_tokens=2048,
                # a self-test has no price: its report shows no cost rather than an invented one
                price_input_chf_per_mtok=None,
                price_output_chf_per_mtok=None,
                capabilities=ModelCapabilities(tools=True, streaming=True),
                # never picked by the selector over a real model
                quality_rank=0,
                speed_rank=0,
            )
            for name in POLICIES
        ]

    async def chat(self, request: ChatRequest) -> ChatResponse:
        name = request.model.split(":", 1)[-1]
        policy = self.policies.get(name)
        if policy is None:
            response = _answer_text(f"unknown eval policy {name!r}")
        elif request.operation != OperationType.AGENT or not request.tools:
            response = _answer_text("Summary: the scripted policy has nothing to add.")
        else:
            response = policy.decide(request)
        response.model = request.model
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        response = await self.chat(request)
        if response.content:
            yield StreamDelta(kind="text", text=response.content)
        for call in response.tool_calls:
            yield StreamDelta(kind="tool_call", tool_call=call)
        yield StreamDelta(kind="usage", usage=response.usage)
        yield StreamDelta(kind="done", finish_reason=response.finish_reason)

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        raise NotImplementedError("eval policies do not embed")

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        raise NotImplementedError("eval policies do not search the web")


class EvalPolicyPlugin:
    """The policies as a plugin object (for :meth:`PluginHost.from_plugins`)."""

    def __init__(self, questions: list[BenchmarkQuestion]) -> None:
        self.provider = EvalPolicyProvider(questions)

    @hookimpl
    def nyla_providers(self) -> list[Any]:
        """The eval policy provider."""
        return [self.provider]


class PolicyHost(Protocol):
    """The plugin host as the scripted ``eval:`` policies are added to it."""

    @property
    def providers(self) -> Container[str]: ...

    def add_plugin(self, obj: Any, name: str) -> Any: ...


def install_policies(host: PolicyHost, questions: list[BenchmarkQuestion]) -> None:
    """Register the policy provider on an existing plugin host (when an ``eval:`` model is
    asked for and the host does not have it yet)."""
    if PROVIDER_ID in host.providers:
        return
    host.add_plugin(EvalPolicyPlugin(questions), "nyla.eval-policies")
