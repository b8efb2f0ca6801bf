"""nyla-toolbox-code: ``executeCode``, model-written Python run in a bubblewrap sandbox.

Where no sandbox can be set up (no ``bwrap``, or user namespaces refused), the hook raises
with the reason: the toolbox is then absent from ``nyla tools list`` and ``nyla plugins show
code-toolbox`` says why, rather than running code unconfined.
"""

from __future__ import annotations

from nyla.sdk import Toolbox, hookimpl
from nyla_toolbox_code.sandbox import SandboxUnavailableError, unavailable_reason
from nyla_toolbox_code.tool import code_tools

__all__ = ["code_toolbox", "nyla_toolboxes"]


def code_toolbox() -> Toolbox:
    """The ``code`` toolbox (not active by default: a run requests it)."""
    return Toolbox(
        id="code",
        label="Code execution",
        description="Run Python in an isolated sandbox on the user's files; save what it writes.",
        tools=code_tools(),
        default_active=False,
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The code toolbox, when a sandbox can be set up here."""
    reason = unavailable_reason()
    if reason is not None:
        raise SandboxUnavailableError(f"no sandbox, so no executeCode: {reason}")
    return [code_toolbox()]
