"""What the agent runtime adds around a run (``kernel.agent.run``), done in the loop's own
generator: the ``started`` event first, the FINAL event's citations (a cancelled run's too),
round memory flushed once after the trace is written, and the run's cancel event dropped
however the run ends (a consumer closing the stream early included)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel

from nyla.agent.trace import load_trace
from nyla.models.agent import AgentStatus, EventType, RunContext
from nyla.models.ai import ChatRequest
from nyla.models.tools import Tool, Toolbox, ToolContext
from nyla.testing.helpers import ToolboxPlugin


class NoArgs(BaseModel):
    pass


def hit(file_id: str, score: float) -> Any:
    return SimpleNamespace(
        file_id=file_id,
        score=score,
        file_name=f"{file_id}.md",
        source_path=None,
        context_ref=None,
        connection_id=None,
        web_url=None,
    )


class Memory:
    """A round recorder with a flush, and a context builder quoting two files."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.rounds: list[tuple[int, str]] = []
        #: the run's id (its trace is read at a flush), set by the test from its first event
        self.run_id: str | None = None
        #: (status of the persisted trace, runs still running) at each flush
        self.flushes: list[tuple[Any, list[str]]] = []
        self.kernel: Any = None

    def builder(self, used: list[Any], neutralization: Any) -> Any:
        async def build(prompt: str, context: RunContext) -> str:
            used[:] = [hit("a", 0.9), hit("b", 0.8)]
            return "Facts: the office is in Bern."

        return build

    def recorder(self, context: RunContext) -> Any:
        memory = self

        class Recorder:
            async def __call__(self, **kw: Any) -> None:
                memory.rounds.append((kw["round"], kw["run_id"]))

            async def flush(self) -> None:
                trace = await load_trace(memory.db, memory.run_id) if memory.run_id else None
                memory.flushes.append(
                    (trace.status if trace else None, list(memory.kernel.agent.running))
                )

        return Recorder()


def kernel_with_memory(make_kernel: Any, provider: Any, db: Any, tools: list[Tool]) -> Any:
    kernel = make_kernel(
        provider,
        ToolboxPlugin(Toolbox(id="t", tools=tools, default_active=True)),
        db=db,
        builtins=False,
    )
    memory = Memory(db)
    memory.kernel = kernel
    kernel.agent._context_builder = memory.builder
    kernel.agent._round_recorder = memory.recorder
    return kernel, memory


def lookup_tool() -> Tool:
    async def lookup(args: NoArgs, ctx: ToolContext) -> str:
        return "42"

    return Tool.from_model("lookup", "Look it up.", NoArgs, lookup, read_only=True)


async def test_a_run_starts_cites_and_flushes_its_memory_after_the_trace(scripted, make_kernel, db):
    def script(request: ChatRequest, i: int) -> Any:
        return [("lookup", {})] if i == 0 else "Bern."

    kernel, memory = kernel_with_memory(make_kernel, scripted(script), db, [lookup_tool()])
    events: list[Any] = []
    async for event in kernel.agent.run("where?"):
        memory.run_id = memory.run_id or event.data["runId"]
        events.append(event)
    first = events[0]
    assert (first.type, first.data["status"], first.data["toolboxes"]) == (
        EventType.STATUS,
        "started",
        ["t"],
    )
    run_id = first.data["runId"]
    assert [e.type for e in events[-2:]] == [EventType.FINAL, EventType.AGENT_SUMMARY]
    assert [c["fileId"] for c in events[-2].data["citations"]] == ["a", "b"]
    assert "citations" not in events[-1].data
    assert memory.rounds == [(1, run_id)]
    # flushed once, after the trace was written, while the run still counted as running
    assert memory.flushes == [(AgentStatus.COMPLETED, [run_id])]
    assert kernel.agent.running == []


async def test_a_cancelled_run_s_final_event_cites_too(scripted, make_kernel, db):
    started = asyncio.Event()

    async def slow(args: NoArgs, ctx: ToolContext) -> str:
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    tools = [Tool.from_model("slow", "Wait.", NoArgs, slow, read_only=True)]
    kernel, _ = kernel_with_memory(make_kernel, scripted(lambda r, i: [("slow", {})]), db, tools)
    events: list[Any] = []

    async def consume() -> None:
        async for event in kernel.agent.run("wait"):
            events.append(event)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    assert kernel.agent.cancel(events[0].data["runId"]) is True
    await asyncio.wait_for(task, 10)
    assert events[-2].type is EventType.FINAL and events[-2].data["status"] == "cancelled"
    assert [c["fileId"] for c in events[-2].data["citations"]] == ["a", "b"]
    assert kernel.agent.running == []


async def test_closing_the_stream_early_ends_the_run_whole(scripted, make_kernel, db):
    kernel, memory = kernel_with_memory(
        make_kernel, scripted(lambda r, i: [("lookup", {})]), db, [lookup_tool()]
    )
    stream = kernel.agent.run("loop")
    run_id = None
    async for event in stream:
        run_id = memory.run_id = run_id or event.data["runId"]
        if event.type is EventType.TOOL_RESULT:
            break
    await stream.aclose()
    trace = await load_trace(db, run_id)
    assert trace.status is AgentStatus.CANCELLED
    assert [c.tool_name for c in trace.tool_calls] == ["lookup"]
    assert memory.flushes == [(AgentStatus.CANCELLED, [run_id])]
    assert kernel.agent.running == []


async def test_closing_the_stream_after_started_drops_the_run(scripted, make_kernel, db):
    kernel, memory = kernel_with_memory(
        make_kernel, scripted(lambda r, i: "never asked"), db, [lookup_tool()]
    )
    stream = kernel.agent.run("stop at once")
    first = await stream.__anext__()
    assert first.data["status"] == "started"
    assert kernel.agent.running == [first.data["runId"]]
    await stream.aclose()
    assert kernel.agent.running == []
    assert memory.flushes == [] and memory.rounds == []  # the loop never had its spec
    assert await load_trace(db, first.data["runId"]) is None


async def test_a_round_prepares_its_context_then_summarizes_in_order(scripted, make_kernel, db):
    """A round's STATUS 'round', then the knowledge context (its failure reported, its cost
    charged when it works), the summarization, the model's request with the block in it."""
    from nyla.agent.spec import RunSpec
    from nyla.models.agent import AgentConfig
    from nyla.models.ai import OperationType, ToolCall

    class Builder:
        def __init__(self) -> None:
            self.calls = 0

        async def __call__(self, prompt: str, context: RunContext) -> str:
            self.calls += 1
            if self.calls % 2 == 0:
                raise RuntimeError("index down")
            return f"Block {self.calls}."

        def take_cost(self) -> float:
            return 0.5

    class Part(BaseModel):
        part: int

    async def big(args: Part, ctx: ToolContext) -> str:
        return f"chunk {ctx.round}: " + "lorem ipsum " * 300

    def script(request: ChatRequest, i: int) -> Any:
        if request.operation is OperationType.DATA_ANALYSE:
            return "Earlier: chunks."
        call = ToolCall(id=f"c{i}", name="big", arguments=f'{{"part": {i}}}')
        return [call] if i < 10 else "done"

    provider = scripted(script, context_window=6000)
    kernel = make_kernel(provider, db=db, builtins=False)
    events = [
        e
        async for e in kernel.agent.loop(
            RunSpec(
                "read",
                config=AgentConfig(stream=False),
                context=RunContext(),
                tools=[Tool.from_model("big", "Big.", Part, big, read_only=True)],
                context_builder=Builder(),
            )
        )
    ]
    shape = [
        (e.round, e.data.get("status") or e.type.value)
        for e in events
        if e.type in (EventType.STATUS, EventType.TOOL_CALL, EventType.ERROR)
    ]
    rounds = {r for r, _ in shape if r}
    for r in rounds:
        steps = [s for n, s in shape if n == r]
        expected = ["round"] + (["contextFailed"] if r % 2 == 0 else [])
        assert steps[: len(expected)] == expected, (r, steps)
        rest = steps[len(expected) :]
        assert rest in ([], ["summarizing"], ["TOOL_CALL"], ["summarizing", "TOOL_CALL"]), rest
    assert any(s == "summarizing" for _, s in shape)
    agent = [r for r in provider.requests if r.operation is OperationType.AGENT]
    for number, request in enumerate(agent, 1):
        texts = " ".join(m.text for m in request.messages)
        assert (f"Block {number}." in texts) is (number % 2 == 1), number
    # the block's cost: charged in each round it came (0.5 each)
    assert events[-1].data["costChf"] >= 0.5 * len([n for n in rounds if n % 2 == 1])


def test_the_conversation_counts_each_added_message_once(monkeypatch):
    """``add`` with the stock counter: each message as the counter counts a list of one;
    a message it cannot count is estimated; another counter is asked with the list."""
    from nyla.agent import conversation
    from nyla.agent.conversation import ConversationManager, estimate_tokens, tool_message
    from nyla.ai.tokens import count_tokens
    from nyla.models.ai import Message, Role, ToolCall

    call = ToolCall(id="c1", name="read_a", arguments='{"round": 1}')
    said = Message(role=Role.ASSISTANT, content="looking", tool_calls=[call])
    result = tool_message(call, "read 1 ok")
    stock = ConversationManager("sys", "task", count_tokens=count_tokens)
    start = stock.tokens()
    stock.add(said)
    stock.add(result)
    assert stock.tokens() - start == count_tokens([said]) + count_tokens([result])
    assert stock.messages[-2:] == [said, result]

    asked: list[list[Message]] = []
    other = ConversationManager("sys", "task", count_tokens=lambda ms: asked.append(ms) or 7)
    other.add(said)
    assert asked[-1] == [said] and other.tokens() == 7 * 3

    def broken(message: Message) -> int:
        raise ValueError("no count")

    monkeypatch.setattr(conversation, "message_tokens", broken)
    before = stock.tokens()
    stock.add(result)
    assert stock.tokens() - before == estimate_tokens([result])
