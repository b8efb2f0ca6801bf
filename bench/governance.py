"""Governance in the agent loop: nyla's ``kernel.agent.run`` with billing and model access on
(the default: every call checked against the mandate's model access and spending policy, a
hold under a monthly limit, the ledger rows written with the run's end) vs off
(``settings={"governance": False}``).

The same scripted conversation both ways (a **scripted fixture** at the provider level): N
model turns, the first N-1 asking for one instant read-only tool, the last a text answer; the
run's context names a mandate with a monthly limit and a provider list, so the preflight takes
a hold and every call passes the access rule. Traces are persisted both ways, on the same
database (the embedded PostgreSQL of ``NYLA_HOME``, or ``NYLA_DATABASE_URL``; a schema of its
own, dropped at the end); no embedding model is installed, so the knowledge context is empty
both ways. The two take turns run by run, ``--repeat`` passes; printed: median
CPU per round of this process, the database server's transactions per run seen by billing and
model access (counted), the ratio on/off, and the load average at start and end.

Usage: ``env -u NYLA_LOCAL_EMBEDDINGS NYLA_HOME=/tmp/nyla-bench .venv/bin/python
bench/governance.py [--rounds 40] [--repeat 5] [--plain]`` (``--plain``: the mandate has
no policy and no access entry, the common case). Never in the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import time
import uuid
from typing import Any

from pydantic import BaseModel

from nyla.ai.scripted import ScriptedPlugin, ScriptedProvider
from nyla.db import Database
from nyla.hookspecs import hookimpl
from nyla.kernel import Kernel
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import Role
from nyla.models.tools import Tool, Toolbox, ToolContext
from nyla.plugins import PluginHost


class NoArgs(BaseModel):
    pass


async def look(args: NoArgs, ctx: ToolContext) -> str:
    return "seen"


class BenchToolbox:
    @hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        tool = Tool.from_model("look", "Look.", NoArgs, look, read_only=True)
        return [Toolbox(id="bench", label="bench", tools=[tool], default_active=True)]


class Counting:
    """The database as billing and model access see it, counting their transactions."""

    def __init__(self, db: Database) -> None:
        self.db, self.sessions = db, 0

    def session(self) -> Any:
        self.sessions += 1
        return self.db.session()

    @property
    def engine(self) -> Any:  # the ledger's rows go through the driver: a transaction too
        outer = self

        class Engine:
            def begin(self) -> Any:
                outer.sessions += 1
                return outer.db.engine.begin()

        return Engine()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def kernel_for(db: Database, rounds: int, governed: bool) -> Kernel:
    def script(request: Any, index: int) -> Any:
        turns = sum(m.role is Role.TOOL for m in request.messages)
        return [("look", {})] if turns < rounds - 1 else "done"

    plugins = PluginHost.from_plugins([], names=[])
    plugins.add_plugin(ScriptedPlugin(ScriptedProvider(script)), "bench-scripted")
    plugins.add_plugin(BenchToolbox(), "bench-toolbox")
    settings: dict[str, Any] = {} if governed else {"governance": False}
    return Kernel(plugins=plugins, db=db, settings=settings)


async def one_run(kernel: Kernel, rounds: int) -> float:
    context = RunContext(user_id="alice", mandate_id="m1")
    config = AgentConfig(max_rounds=rounds, stream=False, max_cost_chf=100.0)
    started = time.process_time()
    async for event in kernel.agent.run("go", config, context):
        last = event
    spent = time.process_time() - started
    assert last.data["status"] == "completed" and last.data["rounds"] == rounds, last.data
    return spent / rounds


async def main(rounds: int, repeat: int, plain: bool) -> None:
    url = os.environ.get("NYLA_DATABASE_URL")
    db = (
        Database(url, schema=f"bench_gov_{uuid.uuid4().hex[:8]}")
        if url
        else Database(schema=f"bench_gov_{uuid.uuid4().hex[:8]}")
    )
    await db.ensure_ready()
    try:
        if not plain:
            setup = kernel_for(db, rounds, True)
            await setup.billing.update_policy("mandate", "m1", monthly_limit_chf=1000.0)
            await setup.model_access.set_providers("mandate", "m1", ["scripted"])
        kernels = {"on": kernel_for(db, rounds, True), "off": kernel_for(db, rounds, False)}
        counters = {}
        for name in ("on",):
            counters[name] = (Counting(db), Counting(db))
            kernels[name].billing.db = counters[name][0]  # type: ignore[assignment]
            kernels[name].model_access.db = counters[name][1]  # type: ignore[assignment]
        for kernel in kernels.values():
            await one_run(kernel, rounds)  # warm-up
        before = {n: (c[0].sessions, c[1].sessions) for n, c in counters.items()}
        load = os.getloadavg()[0]
        cpu: dict[str, list[float]] = {"on": [], "off": []}
        for i in range(repeat):
            order = ("on", "off") if i % 2 == 0 else ("off", "on")
            for name in order:
                cpu[name].append(await one_run(kernels[name], rounds))
        billing, access = (
            counters["on"][0].sessions - before["on"][0],
            counters["on"][1].sessions - before["on"][1],
        )
        on, off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
        what = "no policy, no access entry" if plain else "a monthly limit and a provider list"
        print(f"mandate with {what}")
        print(f"rounds {rounds}, repeat {repeat}, load {load:.2f} -> {os.getloadavg()[0]:.2f}")
        print(
            f"CPU per round: governance on {on * 1000:.3f} ms, off {off * 1000:.3f} ms, "
            f"on/off {on / off:.3f}"
        )
        print(
            f"transactions per run with governance on: billing {billing / repeat:.1f}, "
            f"model access {access / repeat:.1f} (entries are kept 10 s)"
        )
        for kernel in kernels.values():
            await kernel.billing.flush(runs=True)
    finally:
        await db.drop_schema()
        await db.dispose()


if __name__ == "__main__":
    # no embedding model is installed here (both ways): the knowledge context says so each round
    logging.getLogger("nyla.agent.run").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--plain", action="store_true", help="the mandate has no policy")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.repeat, args.plain))
