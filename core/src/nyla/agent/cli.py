"""``nyla run`` (run the agent on a prompt, streaming its events; ``--detach`` queues it for a
worker) and ``nyla runs list|show`` (the persisted traces), ``nyla runs follow`` (a durable
run's events), ``nyla runs resume`` (an interrupted durable run again)."""

from __future__ import annotations

import os
import sys
import uuid
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from nyla.commands.output import emit_json, json_line, json_option, run_async, safe_text, table
from nyla.commands.recording import check_replay_model, finish_tape, open_tape, tape_options

if TYPE_CHECKING:
    from nyla.kernel import Kernel

NO_MODEL_HELP = """no model is configured for agent runs.

Configure a provider (environment variable or {config}), for example:
  OPENAI_API_KEY=...        (or ANTHROPIC_API_KEY / MISTRAL_API_KEY)
  or, offline, any local OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio):
  NYLA_PRIVATE_LLM_BASE_URL=http://localhost:11434/v1
  NYLA_PRIVATE_LLM_MODELS=llama3.1:8b

`nyla models list --operation agent` shows every model and why it is not available."""


def _config_path() -> str:
    try:
        from nyla.config import config_path

        return str(config_path())
    except Exception:
        return "the nyla config file"


def agent_models(kernel: Kernel) -> tuple[list[Any], list[Any]]:
    """(available, unavailable) models that can run the agent (operation ``agent``)."""
    from nyla.models.ai import OperationType

    specs = [m for m in kernel.plugins.models() if OperationType.AGENT in m.operation_types]
    return [m for m in specs if m.available], [m for m in specs if not m.available]


def check_model(kernel: Kernel, model: str | None) -> None:
    """Raise a clear ClickException when no (or not the named) agent model is usable."""
    available, unavailable = agent_models(kernel)
    if model:
        if any(m.id == model for m in available):
            return
        why = next((m.unavailable_reason for m in unavailable if m.id == model), None)
        if why:
            raise click.ClickException(f"model {model!r} is not available: {why}")
        known = ", ".join(m.id for m in available) or "none"
        raise click.ClickException(f"no agent model {model!r}; available: {known}")
    if not available:
        raise click.ClickException(NO_MODEL_HELP.format(config=_config_path()))


def _may_have(registry: dict[str, Any], toolbox_id: str) -> bool:
    """Whether a run may get toolbox ``toolbox_id``: a registered one, or one a plugin's
    ``RunToolboxes`` resolves when the run starts (an MCP server's ``mcp:<name>``)."""
    from nyla.models.run_toolboxes import RunToolboxes

    if toolbox_id in registry and not isinstance(registry[toolbox_id], RunToolboxes):
        return True
    return any(isinstance(s, RunToolboxes) and s.may_answer(toolbox_id) for s in registry.values())


def _timezone() -> str:
    explicit = os.environ.get("NYLA_TIMEZONE") or os.environ.get("TZ")
    if explicit:
        return explicit
    try:
        link = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in link:
            return link.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    return "UTC"


class _Printer:
    """Renders events for people: streamed text, one line per tool call, a summary table."""

    def __init__(self) -> None:
        from rich.console import Console

        self.err = Console(stderr=True, highlight=False)
        self.round_text = ""
        self.open_line = False

    def _end_line(self) -> None:
        if self.open_line:
            click.echo()
            self.open_line = False

    def __call__(self, event: Any) -> None:
        kind = str(event.type)
        if kind == "CHUNK":
            click.echo(safe_text(event.text), nl=False)
            self.round_text += event.text
            self.open_line = True
        elif kind == "STATUS":
            if event.data.get("status") == "round":
                self.round_text = ""
                if self.err.is_terminal and event.round > 1:
                    self._end_line()
                    self.err.print(f"[dim]round {event.round}/{event.data['maxRounds']}[/dim]")
            elif event.data.get("status") == "summarizing":
                self._end_line()
                self.err.print("[dim]… summarizing the earlier conversation[/dim]")
        elif kind == "TOOL_RESULT":
            self._end_line()
            d = event.data
            mark = (
                "[green]ok[/green]"
                if d["success"]
                else f"[red]error[/red] {escape(str(d.get('error')))}"
            )
            self.err.print(
                f"  [cyan]{escape(str(d['toolName']))}[/cyan] ({d['durationMs']:.0f} ms) {mark}"
            )
        elif kind == "ERROR":
            self._end_line()
            self.err.print(f"[red]{escape(event.text)}[/red]")
        elif kind == "FINAL":
            if event.text and event.text.strip() != self.round_text.strip():
                self._end_line()
                click.echo(event.text)
            self._end_line()
        elif kind == "AGENT_SUMMARY":
            self._end_line()
            d = event.data
            rows = [
                ("status", d["status"]),
                ("model", d.get("model") or "-"),
                ("rounds", d["rounds"]),
                ("tool calls", d["toolCalls"]),
                ("tokens in/out", f"{d['inputTokens']}/{d['outputTokens']}"),
                ("cost CHF", f"{d['costChf']:.6f}"),
                (
                    "repairs",
                    f"{d['validationFailures']} rejected, {d['repairAttempts']} attempts, "
                    f"{d['successAfterRepair']} repaired",
                ),
                ("run id", d["runId"]),
            ]
            if d.get("error"):
                rows.append(("error", d["error"]))
            table("run", ["", ""], rows)


@click.command("run")
@click.argument("prompt")
@click.option("--model", default=None, help="Model id (provider:model); default: the selector's.")
@click.option("--toolbox", "toolboxes", multiple=True, help="Activate this toolbox too (repeat).")
@click.option("--max-rounds", type=click.IntRange(1, 100), default=25, show_default=True)
@click.option("--max-cost-chf", type=click.FloatRange(min=0), default=None, help="Budget in CHF.")
@click.option(
    "--user", "user_id", default=None, help="User id of the run (default: $NYLA_USER or local)."
)
@click.option("--timezone", default=None, help="IANA timezone for dates (default: local).")
@click.option("--mandate", "mandate_id", default=None, help="Mandate the run works in.")
@click.option(
    "--feature",
    "feature_code",
    default=None,
    help="Feature code of the instance (switches its toolboxes on), e.g. trustee.",
)
@click.option("--instance", "feature_instance_id", default=None, help="Feature instance id.")
@click.option("--no-stream", is_flag=True, help="Wait for whole answers instead of streaming.")
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON lines.")
@click.option(
    "--detach",
    is_flag=True,
    help="Queue the run for a nyla worker and print its id (NYLA_JOBS=procrastinate).",
)
@tape_options(directory=False)
def run(
    prompt: str,
    model: str | None,
    toolboxes: tuple[str, ...],
    max_rounds: int,
    max_cost_chf: float | None,
    user_id: str | None,
    timezone: str | None,
    mandate_id: str | None,
    feature_code: str | None,
    feature_instance_id: str | None,
    no_stream: bool,
    as_json: bool,
    detach: bool,
    record: Any,
    replay: Any,
) -> None:
    """Run the agent on PROMPT and stream what it does (--record / --replay: see
    docs/replay.md)."""
    from nyla.identity import default_user
    from nyla.kernel import Kernel
    from nyla.models.agent import AgentConfig, RunContext

    kernel = Kernel()
    tape = open_tape(kernel, record, replay, directory=False)
    if tape is not None and tape.replaying:
        check_replay_model(tape, model)
    else:
        check_model(kernel, model)
    unknown = [t for t in toolboxes if not _may_have(kernel.plugins.toolboxes, t)]
    if unknown:
        known = ", ".join(sorted(kernel.plugins.toolboxes))
        hint = kernel.plugins.failure_hint("toolboxes")
        raise click.ClickException(f"unknown toolbox {', '.join(unknown)}; known: {known}{hint}")
    run_id = uuid.uuid4().hex
    config = AgentConfig(
        model=model,
        max_rounds=max_rounds,
        max_cost_chf=max_cost_chf,
        initial_toolboxes=list(toolboxes),
        stream=not no_stream,
    )
    context = RunContext(
        user_id=user_id or default_user(),
        timezone=timezone or _timezone(),
        workflow_id=f"cli-{run_id}",
        mandate_id=mandate_id,
        feature_code=feature_code,
        feature_instance_id=feature_instance_id,
    )
    if detach:
        from nyla.agent.runs_cli import detach_run

        return detach_run(kernel, prompt, config, context, run_id=run_id, as_json=as_json)
    printer = _Printer()
    if not as_json:
        printer.err.print(f"[dim]run {run_id} as user {escape(context.user_id)}[/dim]")

    async def go() -> str:
        status = "error"
        try:
            prepared = await kernel.agent.user_context(context)
            async for event in kernel.agent.run(prompt, config, prepared, run_id=run_id):
                if as_json:
                    click.echo(json_line(event.to_wire()))
                else:
                    printer(event)
                if str(event.type) == "AGENT_SUMMARY":
                    status = event.data["status"]
        finally:
            await kernel.aclose()
        finish_tape(tape)
        return status

    status = run_async(go())
    if status in ("error", "cancelled"):
        sys.exit(1)


@click.group("runs")
def runs() -> None:
    """Past agent runs and their traces."""


@runs.command("list")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--user", "user_id", default=None, help="Only this user's runs.")
@json_option
def runs_list(limit: int, user_id: str | None, as_json: bool) -> None:
    """The latest runs: id, start, status, rounds, tool calls, cost, prompt."""
    from nyla.agent.trace import list_traces
    from nyla.kernel import Kernel

    kernel = Kernel()

    async def go() -> list[Any]:
        try:
            return await list_traces(kernel.db, user_id=user_id, limit=limit)
        finally:
            await kernel.aclose()

    traces = run_async(go())
    if as_json:
        emit_json([{**t.to_wire(), "toolCalls": len(t.tool_calls)} for t in traces])
        return
    table(
        "runs",
        ["run id", "started", "status", "rounds", "tools", "cost CHF", "model", "prompt"],
        [
            (
                t.run_id,
                t.started_at.strftime("%Y-%m-%d %H:%M:%S") if t.started_at else "-",
                str(t.status),
                t.rounds,
                len(t.tool_calls),
                f"{t.cost_chf:.6f}",
                t.model or "-",
                t.prompt.replace("\n", " ")[:60],
            )
            for t in traces
        ],
    )


@runs.command("show")
@click.argument("run_id")
@json_option
def runs_show(run_id: str, as_json: bool) -> None:
    """One run's trace: totals, repair counters and every tool call."""
    from nyla.agent.trace import load_trace
    from nyla.kernel import Kernel

    kernel = Kernel()

    async def go() -> Any:
        try:
            return await load_trace(kernel.db, run_id)
        finally:
            await kernel.aclose()

    trace = run_async(go())
    if trace is None:
        raise click.ClickException(f"no run {run_id!r}")
    if as_json:
        emit_json(trace.to_wire())
        return
    table(
        f"run {trace.run_id}",
        ["", ""],
        [
            ("status", str(trace.status)),
            ("prompt", trace.prompt),
            ("model", trace.model or "-"),
            ("rounds", trace.rounds),
            ("cost CHF", f"{trace.cost_chf:.6f}"),
            ("tokens in/out", f"{trace.input_tokens}/{trace.output_tokens}"),
            ("validation failures", trace.validation_failures),
            ("repair attempts", trace.repair_attempts),
            ("success after repair", trace.success_after_repair),
            ("parent run", trace.parent_run_id or "-"),
            ("error", trace.error or "-"),
            ("final text", trace.final_text[:500]),
        ],
    )
    table(
        "tool calls",
        ["round", "tool", "ok", "ms", "validation", "arguments", "error"],
        [
            (
                c.round,
                c.tool_name,
                "yes" if c.success else "no",
                f"{c.duration_ms:.0f}",
                c.validation_failure_code or "-",
                c.arguments[:60],
                (c.error or "")[:60],
            )
            for c in trace.tool_calls
        ],
    )


@runs.command("follow")
@click.argument("run_id")
@click.option(
    "--after", type=click.IntRange(min=0), default=0, help="Only events after this event id."
)
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON lines.")
def runs_follow(run_id: str, after: int, as_json: bool) -> None:
    """Print RUN_ID's events as they are stored, until it ends: a run of any process (a
    server, a worker, nyla run --detach). Exits 1 when it ended in error, cancelled or
    interrupted."""
    from nyla.agent.runs_cli import print_events
    from nyla.kernel import Kernel

    kernel = Kernel()

    async def go() -> Any:
        try:
            status, _ = await kernel.runs.read(run_id, after)
            if status is None:
                raise click.ClickException(f"no run {run_id!r}")
            return await print_events(kernel, run_id, after, as_json=as_json, printer=_Printer())
        finally:
            await kernel.aclose()

    status = run_async(go())
    if not as_json:
        click.echo(f"run {run_id}: {status}", err=True)
    if status in ("error", "cancelled", "interrupted"):
        sys.exit(1)


@runs.command("resume")
@click.argument("run_id")
@click.option(
    "--confirm-writes",
    is_flag=True,
    help="Resume although it started writes that may or may not have taken effect.",
)
@click.option("--user", "user_id", default=None, help="Whose run (default: $NYLA_USER or local).")
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON lines.")
def runs_resume(run_id: str, confirm_writes: bool, user_id: str | None, as_json: bool) -> None:
    """Run the interrupted run RUN_ID again, as a new run in its conversation that goes on
    after the rounds it completed, and print its events. Exits 1 when it ends in error,
    cancelled or interrupted."""
    from nyla.agent.runs_cli import resume_run
    from nyla.identity import default_user
    from nyla.kernel import Kernel

    new_id, status = resume_run(
        Kernel(),
        run_id,
        user_id=user_id or default_user(),
        confirm_writes=confirm_writes,
        as_json=as_json,
        printer=_Printer(),
    )
    if not as_json:
        click.echo(f"run {new_id}: {status}", err=True)
    if status in ("error", "cancelled", "interrupted"):
        sys.exit(1)
