"""Toolboxes resolved per run (``from nyla.sdk.run_toolboxes import RunToolboxes``): a
plugin that keeps its toolboxes as rows in the kernel's PostgreSQL returns one
:class:`RunToolboxes` from ``nyla_toolboxes``; the agent runtime binds it to the kernel's
database and asks it for the run's toolboxes when a run starts, so a toolbox added by
another process (or while ``nyla serve`` runs) is there for the next run. See
``docs/writing-a-plugin.md``."""

from __future__ import annotations

from nyla.models.run_toolboxes import RunToolboxes

__all__ = ["RunToolboxes"]
