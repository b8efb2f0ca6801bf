"""``executeCode``: model-written Python run in the sandbox, with the user's files read-only
in ``in/`` and what the code writes into ``out/`` saved as chat documents."""

from __future__ import annotations

import mimetypes
import re
import signal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from nyla.sdk import Tool, ToolContext, ToolResult
from nyla.sdk.documents import save_tool_file
from nyla_toolbox_code.sandbox import Limits, SandboxResult, SandboxUnavailableError, run_python

#: bytes of the user's files copied in at most (all together)
MAX_INPUT_BYTES = 32 << 20
MAX_INPUT_FILES = 10
LIMITS = Limits()
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ExecuteCodeArgs(BaseModel):
    """Arguments of ``executeCode``."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    code: str = Field(min_length=1, max_length=100_000, description="The Python 3 program.")
    file_ids: list[str] = Field(
        default_factory=list,
        max_length=MAX_INPUT_FILES,
        description="Ids of the user's files to copy read-only into in/ under their names.",
    )


def _safe_name(name: str, taken: set[str]) -> str:
    base = _UNSAFE.sub("_", name).strip("._") or "file"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{n}_{base}"
    taken.add(candidate)
    return candidate


async def _inputs(args: ExecuteCodeArgs, ctx: ToolContext) -> dict[str, bytes] | ToolResult:
    inputs: dict[str, bytes] = {}
    total = 0
    for file_id in args.file_ids:
        item = await ctx.services.files.get(file_id, ctx.run)
        if item is None:
            return ToolResult.fail(f"no file {file_id!r}", "NOT_FOUND", field="fileIds")
        total += item.size
        if total > MAX_INPUT_BYTES:
            return ToolResult.fail(
                f"the files named have more than {MAX_INPUT_BYTES} bytes together", "TOO_LARGE"
            )
        inputs[_safe_name(item.name, set(inputs))] = await ctx.services.files.read_bytes(
            file_id, ctx.run
        )
    return inputs


def _stream_text(label: str, head: bytes, total: int) -> str:
    text = head.decode("utf-8", errors="replace")
    if total > len(head):
        text += f"\n[{label} truncated: {total} bytes, the first {len(head)} shown]"
    return text


def _report(result: SandboxResult, saved: list[str]) -> str:
    if result.timed_out:
        status = f"killed after the wall-clock limit of {LIMITS.wall_seconds:g} s"
    elif result.exit_code is not None and result.exit_code > 128:
        killer = signal.Signals(result.exit_code - 128).name
        status = f"killed by {killer}" + (" (CPU limit)" if killer == "SIGXCPU" else "")
    else:
        status = f"exit code {result.exit_code}"
    lines = [f"Ran in the sandbox: {status} ({result.wall_seconds:.2f} s)."]
    if result.stdout.total:
        lines += ["stdout:", _stream_text("stdout", result.stdout.head, result.stdout.total)]
    if result.stderr.total:
        lines += ["stderr:", _stream_text("stderr", result.stderr.head, result.stderr.total)]
    lines += saved
    if result.dropped:
        lines.append(
            f"Not saved (over {LIMITS.out_files} files or {LIMITS.out_bytes} bytes, or not a "
            f"regular file): {', '.join(result.dropped)}"
        )
    return "\n".join(lines)


async def execute_code(args: ExecuteCodeArgs, ctx: ToolContext) -> ToolResult:
    """Copy the files in, run the code, save what it wrote into out/."""
    inputs = await _inputs(args, ctx)
    if isinstance(inputs, ToolResult):
        return inputs
    try:
        result = await run_python(args.code, inputs, LIMITS)
    except SandboxUnavailableError as exc:
        return ToolResult.fail(str(exc), "SANDBOX_UNAVAILABLE")
    files, saved = [], []
    for name, content in result.files:
        flat = _safe_name(name.replace("/", "_"), set())
        mime = mimetypes.guess_type(flat)[0] or "application/octet-stream"
        try:
            item = await save_tool_file(ctx, flat, content, mime, label=f"executeCode:{flat}")
        except ValueError as exc:
            result.dropped.append(f"{flat} ({exc})")
            continue
        files.append(item.to_wire())
        saved.append(item.summary)
    data = {
        "exitCode": result.exit_code,
        "timedOut": result.timed_out,
        "wallSeconds": round(result.wall_seconds, 3),
        "stdoutBytes": result.stdout.total,
        "stderrBytes": result.stderr.total,
        "files": files,
        "notSaved": result.dropped,
    }
    report = _report(result, saved)
    if result.timed_out or result.exit_code != 0:
        failed = ToolResult.fail(report, "CODE_FAILED")
        return failed.model_copy(update={"data": data})
    return ToolResult.ok(report, data=data)


def code_tools() -> list[Tool]:
    """``executeCode``."""
    return [
        Tool.from_model(
            "executeCode",
            "Run a Python 3 program (standard library only) in an isolated sandbox: no "
            "network, no access to the host, limited CPU, memory, time and output. Files "
            "named by fileIds are readable in in/; files the program writes into out/ are "
            "saved as the user's documents. Print the results you need to see.",
            ExecuteCodeArgs,
            execute_code,
            read_only=False,
            timeout_s=LIMITS.wall_seconds + 30,
        )
    ]
