"""nyla-toolbox-email: five e-mail tools (search, read with attachments, draft, send, organize)
over every connected mail service, reached through the kernel's connector registry; sending
passes the before-tool-call policy first."""

from __future__ import annotations

from typing import Any

from nyla.sdk import Tool, Toolbox, ToolContext, ToolResult, hookimpl
from nyla_toolbox_email.policy import send_policy
from nyla_toolbox_email.tools import email_tools

__all__ = ["email_toolbox", "nyla_before_tool_call", "nyla_toolboxes"]

#: the connector services whose connection switches the toolbox on (Outlook, Gmail)
REQUIRES_CONNECTION = ["msft", "google"]


def email_toolbox() -> Toolbox:
    """The ``email`` toolbox."""
    return Toolbox(
        id="email",
        label="E-mail",
        description="Search, read, draft, send and organize the user's e-mail.",
        tools=email_tools(),
        default_active=False,
        requires_connection=REQUIRES_CONNECTION,
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The e-mail toolbox."""
    return [email_toolbox()]


@hookimpl
def nyla_before_tool_call(
    tool: Tool, arguments: dict[str, Any], context: ToolContext
) -> ToolResult | None:
    """The send policy (see :mod:`nyla_toolbox_email.policy`)."""
    return send_policy(tool, arguments, context)
