"""Toolboxes a plugin resolves when a run starts, from rows it keeps in the kernel's
PostgreSQL (the MCP servers a user added while the host runs, on another machine too)."""

from __future__ import annotations

from typing import Any

from nyla.models.agent import RunContext
from nyla.models.tools import Toolbox


class RunToolboxes(Toolbox):
    """A registry entry (returned from ``nyla_toolboxes`` like any toolbox) that stands for
    the toolboxes of one run, resolved when the run starts.

    The agent runtime binds it once to the kernel's database (:meth:`bind`, as the feature
    service binds a feature's data provider: a ``nyla.host.Database`` with ``engine``,
    ``schema``, ``session()`` and ``ensure_ready()``), then awaits :meth:`for_run` with the
    run's context before each run. The toolboxes it answers join that run's registry (an id
    a plugin registered statically keeps the static toolbox); the entry itself is never
    offered to a model. A source that fails or takes longer than ``resolve_timeout_s`` is
    logged and left out of that run: the run goes on without its toolboxes."""

    #: the longest a run waits for :meth:`for_run` before it starts without these toolboxes
    resolve_timeout_s: float = 10.0

    def may_answer(self, toolbox_id: str) -> bool:
        """Whether a run may get a toolbox of this id from here (``<id>:<name>``): what a
        command checks a requested id against before the run resolves it."""
        return toolbox_id.startswith(f"{self.id}:")

    def bind(self, db: Any) -> None:
        """Keep ``db`` (the kernel's database) for :meth:`for_run`."""
        raise NotImplementedError(f"{type(self).__name__} must implement bind(db)")

    async def for_run(self, context: RunContext) -> list[Toolbox]:
        """The toolboxes a run of ``context`` may use (its user's, its mandate's)."""
        raise NotImplementedError(f"{type(self).__name__} must implement for_run(context)")
