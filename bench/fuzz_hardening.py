"""Fuzz campaign of issue 12 against the real kernel on the embedded PostgreSQL.

Three parts, each counting its cases and its failures (a failure is anything but the
expected shape; every one is printed):

1. **Tool calls through the agent loop**: a scripted model sends random malformed calls
   (garbage JSON, deep nesting, wrong types, unknown tools, NUL bytes and lone surrogates in
   names and arguments, huge ids, other users' file ids) to the core toolbox. Failure: a run
   that does not end ``completed`` with FINAL + AGENT_SUMMARY, a tool result without a
   structured error, a trace not persisted whole, or a file of another user touched.
2. **Scoped searches**: random contexts (user, mandate, feature instance, scopes) search an
   index holding chunks of several owners. Failure: a hit whose owner key the context may not
   read.
3. **Table-tool calls**: random arguments for browseTable / queryTable / aggregateTable on a
   seeded trustee instance. Failure: a rejection without a validator/schema code and a
   suggestion, or any text of a database error reaching the model.

Usage: ``.venv/bin/python bench/fuzz_hardening.py [--runs 200] [--searches 500]
[--table-calls 1500] [--seed 12]``. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import string
import tempfile
import uuid
from pathlib import Path
from typing import Any

from nyla.models.knowledge import SearchQuery

FAILURES: list[str] = []


def junk(rng: random.Random) -> Any:
    pick = rng.randrange(14)
    if pick == 0:
        return "[" * rng.randrange(500, 3000)
    if pick == 1:
        depth = rng.randrange(200, 1500)
        return '{"fileId": ' + "[" * depth + "]" * depth + "}"
    if pick == 2:
        return json.dumps({"fileId": "\x00" + rng.choice(string.ascii_letters)})
    if pick == 3:
        return '{"fileId": "\ud800"}'
    if pick == 4:
        return json.dumps({"fileId": rng.randrange(-(2**70), 2**70)})
    if pick == 5:
        return json.dumps({"fileId": "x" * rng.randrange(1000, 20000)})
    if pick == 6:
        return json.dumps([1, 2, 3])
    if pick == 7:
        return "not json at all"
    if pick == 8:
        return json.dumps({"query": "", "folderId": {"nested": [None, True]}})
    if pick == 9:
        return json.dumps({"startLine": "--5", "fileId": "f"})
    if pick == 10:
        return json.dumps({"unknown": 1})
    if pick == 11:
        return ""
    if pick == 12:
        return json.dumps({"fileId": "OTHER"})  # replaced by another user's file id
    return json.dumps({"tags": ["a"] * rng.randrange(0, 50), "mode": rng.choice(["set", 5])})


TOOLS = [
    "readFile",
    "listFiles",
    "searchInFileContent",
    "deleteFile",
    "renameFile",
    "tagFile",
    "copyFile",
    "listFolders",
    "nope\x00",
    "r\ud800",
    "x" * 300,
]


async def part_tool_calls(kernel: Any, runs: int, rng: random.Random) -> dict[str, int]:
    from nyla.agent.trace import load_trace
    from nyla.models.agent import AgentConfig, RunContext
    from nyla.models.ai import ToolCall

    other = RunContext(user_id="victim", mandate_id="m0")
    secret = await kernel.files.save("secret.txt", b"the victim's secret", other)
    calls = failures = 0
    provider = kernel.plugins.providers["scripted"]

    def script(request: Any, index: int) -> Any:
        if index % 2:
            return "done \ud800"
        batch = []
        for i in range(rng.randrange(1, 6)):
            raw = junk(rng).replace('"OTHER"', json.dumps(secret.id))
            call_id = "c" * rng.choice([3, 200]) + str(i)
            batch.append(ToolCall(id=call_id, name=rng.choice(TOOLS), arguments=raw))
        return batch

    provider.script = script
    for n in range(runs):
        provider.requests.clear()
        context = RunContext(user_id="attacker", mandate_id=rng.choice(["m0", "m1"]))
        config = AgentConfig(stream=bool(n % 2), max_rounds=2, initial_toolboxes=["core"])
        events = [e async for e in kernel.agent.run("fuzz", config, context)]
        results = [e for e in events if e.type.value == "TOOL_RESULT"]
        calls += len(results)
        summary = events[-1].data
        problem = None
        if [e.type.value for e in events[-2:]] != ["FINAL", "AGENT_SUMMARY"]:
            problem = "no FINAL/AGENT_SUMMARY"
        elif summary.get("status") not in ("completed", "maxRoundsReached"):
            problem = f"status {summary.get('status')}: {summary.get('error')}"
        elif any(not r.data["success"] and not r.data["errorDetails"] for r in results):
            problem = "a failed result without errorDetails"
        else:
            trace = await load_trace(kernel.db, summary["runId"])
            if trace is None or len(trace.tool_calls) != len(results):
                problem = "trace lost or incomplete"
            elif trace.error and trace.error.startswith("trace reduced"):
                problem = f"trace reduced: {trace.error[:120]}"
        still = await kernel.files.get(secret.id, other)
        if still is None or still.name != "secret.txt":
            problem = "the victim's file was touched"
        if problem:
            failures += 1
            FAILURES.append(f"run {n}: {problem}")
    return {"runs": runs, "tool calls": calls, "failures": failures}


async def part_searches(kernel: Any, searches: int, rng: random.Random) -> dict[str, int]:
    from nyla.knowledge.vectors import owner_key, readable_keys
    from nyla.models.agent import RunContext
    from nyla.models.files import FileItem, Scope

    users, mandates, instances = ["u0", "u1", "u2"], ["m0", "m1", None], ["fi0", "fi1", None]
    owners: dict[str, str] = {}
    for i in range(40):
        scope = rng.choice(list(Scope))
        user, mandate, inst = rng.choice(users), rng.choice(mandates), rng.choice(instances)
        if scope == Scope.MANDATE and mandate is None:
            mandate = "m0"
        if scope == Scope.FEATURE_INSTANCE and inst is None:
            inst = "fi0"
        item = FileItem(
            id=f"s{i}",
            name=f"doc{i}.txt",
            scope=scope,
            user_id=user,
            mandate_id=mandate,
            feature_instance_id=inst,
        )
        ctx = RunContext(user_id=user, mandate_id=mandate, feature_instance_id=inst)
        owners[item.id] = owner_key(
            scope, user_id=user, mandate_id=mandate, feature_instance_id=inst
        )
        text = f"payroll budget contract note {i} " * 5
        await kernel.knowledge.indexing.index_file(item, text.encode(), context=ctx)
    failures = hits = 0
    for n in range(searches):
        ctx = RunContext(
            user_id=rng.choice(users),
            mandate_id=rng.choice(mandates),
            feature_instance_id=rng.choice(instances),
        )
        scopes = rng.choice([None, [rng.choice(list(Scope))]])
        result = await kernel.knowledge.search(
            SearchQuery(
                text=rng.choice(["payroll", "budget", "contract note 3"]),
                context=ctx,
                scopes=scopes,
                k=10,
            )
        )
        allowed = set(readable_keys(ctx, scopes))
        for hit in result.hits:
            hits += 1
            key = owners.get(hit.file_id)
            if key not in allowed:
                failures += 1
                FAILURES.append(f"search {n}: {key} not readable by {ctx}")
    return {"scoped searches": searches, "hits checked": hits, "failures": failures}


async def part_table_calls(kernel: Any, count: int, rng: random.Random) -> dict[str, int]:
    from nyla.agent.registry import ToolRegistry
    from nyla.features.validator import ERROR_CODES
    from nyla.models.ai import ToolCall
    from nyla.models.tools import ToolContext

    schema_codes = {
        "INVALID_JSON",
        "INVALID_TYPE",
        "INVALID_VALUE",
        "MISSING_FIELD",
        "UNKNOWN_FIELD",
        "REPEATED_CALL",
    }
    tables = kernel.features.tables("trustee")
    fields = sorted({f.name for t in tables for f in t.fields})
    values: list[Any] = [
        None,
        True,
        5,
        -1,
        2**64,
        10**30,
        1.5,
        float("1e308"),
        "2025-03",
        "102%",
        "\\",
        "1E+999999",
        "--5",
        "²",
        "caf\ud800",
        "x" * 20000,
        [1, 2],
        [],
        {"a": 1},
        "2025-13-45",
        "NaN",
    ]

    def arguments() -> dict[str, Any]:
        a: dict[str, Any] = {"table": rng.choice([t.name for t in tables] + ["nope", ""])}
        if rng.random() < 0.8:
            a["filters"] = (
                [
                    {
                        "field": rng.choice([*fields, "zzz"]),
                        "op": rng.choice(["eq", "lt", "between", "like", "in", "is_null", "~"]),
                        "value": rng.choice(values),
                    }
                    for _ in range(rng.randrange(0, 4))
                ]
                if rng.random() < 0.9
                else rng.choice(values)
            )
        for key in ("orderBy", "limit", "offset", "fields", "groupBy", "field", "sampleRows"):
            if rng.random() < 0.3:
                a[key] = rng.choice([*values, rng.choice(fields)])
        a["function"] = rng.choice(["SUM", "COUNT", "AVG", "MEDIAN", 3])
        return a

    failures = 0
    registry = ToolRegistry(kernel.features.table_tools("trustee", "fuzz"))
    for n in range(count):
        tool = rng.choice(["browseTable", "queryTable", "aggregateTable"])
        args = arguments()
        try:
            raw = json.dumps(args)
        except ValueError:
            continue
        registry._seen.clear()
        result = (
            await registry.dispatch(ToolCall(id=str(n), name=tool, arguments=raw), ToolContext())
        ).result
        if result.success:
            continue
        details = result.error_details
        ok = (
            details is not None
            and details.code in (*ERROR_CODES, *schema_codes)
            and (details.suggestion or details.hint)
            and "database" not in (result.error or "").lower()
        )
        if not ok:
            failures += 1
            FAILURES.append(f"table call {n} {tool} {raw[:120]!r}: {result.error}")
    return {"table-tool calls": count, "failures": failures}


async def main(args: argparse.Namespace) -> None:
    from nyla.db import Database, start_embedded, to_sqlalchemy_url
    from nyla.kernel import Kernel
    from nyla.plugins import PluginHost
    from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="nyla-fuzz-"))
    server = start_embedded(base, cleanup_mode="delete")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    try:
        db = Database(to_sqlalchemy_url(server.get_uri()), schema=f"f_{uuid.uuid4().hex[:8]}")
        await db.ensure_ready()
        import nyla_feature_trustee as trustee
        from nyla.ai import default_neutralizer

        def embed(texts: list[str]) -> list[list[float]]:
            out = []
            for text in texts:
                vec = [1.0 + text.lower().count(ch) for ch in "abcdeilmnoprstuy"]
                norm = sum(v * v for v in vec) ** 0.5
                out.append([v / norm for v in vec])
            return out

        provider = ScriptedProvider(lambda r, i: "ok", embed_fn=embed)
        host = PluginHost.from_plugins(
            [ScriptedPlugin(provider), trustee, default_neutralizer],
            builtins=True,
            names=["scripted", "trustee", "neutralizer"],
        )
        kernel = Kernel(plugins=host, db=db, settings={"ai": {"max_attempts": 1}})
        await kernel.features.seed("trustee", "fuzz")
        figures = {}
        figures.update(await part_tool_calls(kernel, args.runs, rng))
        print(json.dumps(figures), flush=True)
        failures = figures.pop("failures")
        table = await part_table_calls(kernel, args.table_calls, rng)
        print(json.dumps(table), flush=True)
        search = await part_searches(kernel, args.searches, rng)
        print(
            json.dumps(
                {
                    "agent runs": figures,
                    "searches": search,
                    "table": table,
                    "tool-call failures": failures,
                },
                indent=2,
            )
        )
        for line in FAILURES[:50]:
            print("FAIL", line)
        await db.dispose()
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--searches", type=int, default=500)
    parser.add_argument("--table-calls", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=12)
    asyncio.run(main(parser.parse_args()))
