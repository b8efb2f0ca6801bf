"""Child process of the workflow-run recovery tests: the ``nyla`` command (``workflows run``,
``workflows resume``, ``worker``) with the ``runs`` probe plugin discovered, recording its
calls in FOLDER, until it ends or is killed.

usage: workflow_child.py FOLDER NYLA-ARGS..."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def main(folder: str, *args: str) -> None:
    from runs_probe import RunsProbe

    from nyla.cli import main as nyla
    from nyla.plugins import PluginHost

    probe = RunsProbe(Path(folder))
    PluginHost.discover = classmethod(  # type: ignore[method-assign,assignment]
        lambda cls, **kw: cls.from_plugins([probe], builtins=True, names=["runs"])
    )
    nyla(list(args))


if __name__ == "__main__":
    main(*sys.argv[1:])
