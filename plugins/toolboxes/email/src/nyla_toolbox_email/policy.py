"""The write barrier in front of ``sendEmail``: a ``nyla_before_tool_call`` policy.

Sending is never read-only (the tool runs alone, in the model's order), and before it runs
this policy checks the settings: ``NYLA_EMAIL_SEND=off`` denies every send, and
``NYLA_EMAIL_SEND_DOMAINS=example.com,example.org`` allows only those recipient domains.
Any other plugin's ``nyla_before_tool_call`` can deny it as well (the first denial wins).
"""

from __future__ import annotations

from typing import Any

from nyla.sdk import Tool, ToolContext, ToolResult, config_value, write_barrier

SEND_TOOL = "sendEmail"
_DRAFT_INSTEAD = "save a draft with draftEmail and tell the user to send it"
#: ``NYLA_EMAIL_SEND=off`` denies every send
_switch = write_barrier("NYLA_EMAIL_SEND", [SEND_TOOL], "sending e-mail", _DRAFT_INSTEAD)


def _domains() -> set[str]:
    raw = config_value("NYLA_EMAIL_SEND_DOMAINS") or ""
    return {d.strip().lower().lstrip("@") for d in raw.split(",") if d.strip()}


def outside_domains(recipients: list[str]) -> list[str]:
    """Recipients outside ``NYLA_EMAIL_SEND_DOMAINS`` (none when it is not set)."""
    allowed = _domains()
    if not allowed:
        return []
    return [r for r in recipients if _domain(r) not in allowed]


def _domain(recipient: str) -> str:
    address = recipient.rsplit("<", 1)[-1].rstrip(">").strip()
    return address.rsplit("@", 1)[-1].lower()


def send_policy(tool: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult | None:
    """``None`` (allow) or the denial the model sees."""
    if tool.name != SEND_TOOL:
        return None
    if (switched_off := _switch(tool, arguments, context)) is not None:
        return switched_off
    allowed = _domains()
    recipients = [*(arguments.get("to") or []), *(arguments.get("cc") or [])]
    outside = outside_domains([r for r in recipients if isinstance(r, str)])
    if outside:
        return ToolResult.fail(
            f"sending to {', '.join(outside)} is not allowed (allowed domains: "
            f"{', '.join(sorted(allowed))})",
            "DENIED",
            field="to",
            suggestion=_DRAFT_INSTEAD,
        )
    return None
