"""The five e-mail tools over the Microsoft 365 connector and a fake Outlook at the wire,
called as an agent run calls them (validated arguments, the run's user, the policy hook)."""

from __future__ import annotations

import functools
import json

import pytest

from nyla.sdk import RunContext
from nyla.testing import call_tool

from .conftest import USER
from .fake_outlook import MAILBOX

BUDGET = MAILBOX["messages"][0]


call = functools.partial(call_tool, user=USER)


async def test_search_shows_sender_and_date_inline(kernel, connection, outlook):
    result = await call(kernel, "searchEmail", {"from": "adele", "subject": "budget"})
    assert result.success, result.error
    assert "✉️ Q4 budget figures" in result.content
    assert "from Adele Vance <AdeleV@contoso.onmicrosoft.com>" in result.content
    assert f"date {BUDGET['receivedDateTime']}" in result.content
    assert "Lunch" not in result.content
    assert outlook.requests[0].url.params["$search"] == '"from:adele subject:(budget)"'
    assert result.data["items"][0]["id"] == f"mail:{BUDGET['id']}"


async def test_read_saves_attachments_into_the_users_files(kernel, connection, outlook):
    await kernel.knowledge.governance.add_data_source(
        "ds-mail", connection.id, "/mail", user_id=USER, neutralize=True
    )
    result = await call(
        kernel, "readEmail", {"messageId": f"mail:{BUDGET['id']}", "saveAttachments": True}
    )
    assert result.success, result.error
    assert "Revenue grew 12 %" in result.content and "cc: Alex Wilber" in result.content
    file_id = result.data["savedFiles"][f"attachment:{BUDGET['id']}:AAMkAGI2TG93AAABEgAQAJ8rT7bZ"]
    run = RunContext(user_id=USER)
    saved = await kernel.files.get(file_id, run)
    assert saved.name == "q4-budget.csv" and saved.neutralize, "the data source's neutralize"
    assert (
        await kernel.files.read_bytes(file_id, run)
        == MAILBOX["attachmentBytes"]["AAMkAGI2TG93AAABEgAQAJ8rT7bZ"].encode()
    )
    assert await kernel.files.get(file_id, RunContext(user_id="someone-else")) is None


async def test_draft_then_send_and_organize(kernel, connection, outlook):
    drafted = await call(
        kernel,
        "draftEmail",
        {"to": ["pavelb@fabrikam.com"], "subject": "Figures", "body": "See Q4."},
    )
    assert drafted.success and not outlook.sent
    sent = await call(kernel, "sendEmail", {"draftId": drafted.data["draftId"]})
    assert sent.success, sent.error
    assert [m["subject"] for m in outlook.sent] == ["Figures"]
    organized = await call(
        kernel,
        "organizeEmail",
        {"messageId": f"mail:{BUDGET['id']}", "flagged": True, "read": True, "moveTo": "archive"},
    )
    assert organized.success, organized.error
    patch = next(r for r in outlook.requests if r.method == "PATCH")
    assert json.loads(patch.content) == {"flag": {"flagStatus": "flagged"}, "isRead": True}
    assert organized.data["messageId"] == f"mail:{BUDGET['id']}-moved"


@pytest.mark.parametrize(
    ("setting", "value", "args"),
    [
        ("NYLA_EMAIL_SEND", "off", {"to": ["pavelb@fabrikam.com"], "subject": "Hi", "body": "x"}),
        (
            "NYLA_EMAIL_SEND_DOMAINS",
            "contoso.com",
            {"to": ["pavelb@fabrikam.com"], "subject": "Hi"},
        ),
    ],
)
async def test_send_is_behind_the_policy(
    kernel, connection, outlook, monkeypatch, setting, value, args
):
    monkeypatch.setenv(setting, value)
    tool = next(t for t in kernel.plugins.toolboxes["email"].tools if t.name == "sendEmail")
    assert not tool.read_only, "a send runs alone, in the model's order"
    result = await call(kernel, "sendEmail", args)
    assert not result.success and result.error_details.code == "DENIED"
    assert not outlook.requests, "a denied send never reaches the vendor"


async def test_connections_are_the_run_users_own(kernel, connection, outlook):
    stranger = await call(kernel, "searchEmail", {"query": "budget"}, user="mallory")
    assert not stranger.success and stranger.error_details.code == "NOT_AVAILABLE"
    named = await call(
        kernel, "searchEmail", {"query": "budget", "connectionId": connection.id}, user="mallory"
    )
    # refused by the kernel's owned-id check before the handler runs (issue 12)
    assert not named.success and named.error_details.code == "NOT_FOUND"
    assert named.error_details.field == "connectionId"
    assert not outlook.requests


async def test_vendor_errors_come_back_as_results(kernel, connection):
    result = await call(kernel, "readEmail", {"messageId": "mail:nope"})
    assert not result.success and result.error_details.code == "NOT_FOUND"
    bad = await call(kernel, "sendEmail", {"body": "no recipient"})
    assert not bad.success and bad.error_details.code == "INVALID_VALUE"


async def test_a_draft_to_a_disallowed_domain_is_not_sent(kernel, connection, outlook, monkeypatch):
    drafted = await call(
        kernel, "draftEmail", {"to": ["pavelb@fabrikam.com"], "subject": "Hi", "body": "x"}
    )
    monkeypatch.setenv("NYLA_EMAIL_SEND_DOMAINS", "contoso.onmicrosoft.com")
    result = await call(kernel, "sendEmail", {"draftId": drafted.data["draftId"]})
    assert not result.success and result.error_details.code == "DENIED"
    assert not outlook.sent and not any(r.url.path.endswith("/send") for r in outlook.requests)
