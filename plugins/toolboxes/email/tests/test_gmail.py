"""The e-mail toolbox answers over a Gmail connection (the Google connector and Gmail faked
at the wire): it switches on for a ``google`` connection, searches with Gmail's operators in
the label, reads with attachments, drafts, sends and organizes with labels."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import pytest_asyncio

from nyla.sdk import RunContext
from nyla.testing import add_connection, call_tool

from .fake_gmail import MAILBOX, FakeGmail

USER = "megan"
BUDGET = MAILBOX["messages"][0]


@pytest.fixture
def gmail() -> FakeGmail:
    return FakeGmail()


@pytest.fixture
def kernel(vendor_kernel: Any, gmail: FakeGmail) -> Any:
    import nyla_connector_google  # the tests' connector; the toolbox itself never imports it
    import nyla_toolbox_email

    env = {"NYLA_GOOGLE_CLIENT_ID": "client-id"}
    return vendor_kernel(gmail, nyla_connector_google, nyla_toolbox_email, env=env)


@pytest_asyncio.fixture
async def connection(kernel: Any) -> Any:
    return await add_connection(kernel, "google", USER, "megan@example.com")


call = functools.partial(call_tool, user=USER)


async def test_a_google_connection_switches_the_toolbox_on(kernel):
    # a run turns the toolbox on for a connection to any of these services (the kernel's
    # activation over several services is tested in core/tests/agent/test_toolboxes.py)
    assert kernel.plugins.toolboxes["email"].connection_services == ("msft", "google")
    assert "google" in kernel.plugins.connectors


async def test_search_over_gmail_in_the_label_with_sender_and_date_inline(
    kernel, connection, gmail
):
    result = await call(
        kernel, "searchEmail", {"from": "adele", "subject": "budget", "folder": "inbox"}
    )
    assert result.success, result.error
    assert "✉️ Q4 budget figures" in result.content
    assert "date 2026-01-05T09:30:00Z; from Adele Vance <adele@example.com>" in result.content
    assert "Lunch" not in result.content
    listing = gmail.requests[0]
    assert listing.url.params["labelIds"] == "INBOX"
    assert listing.url.params["q"] == "from:(adele) subject:(budget)"
    assert result.data["items"][0]["id"] == f"mail:{BUDGET['id']}"


async def test_read_over_gmail_saves_the_attachment(kernel, connection, gmail):
    result = await call(
        kernel, "readEmail", {"messageId": f"mail:{BUDGET['id']}", "saveAttachments": True}
    )
    assert result.success, result.error
    assert "Revenue grew 9 %" in result.content and "cc: Alex Wilber" in result.content
    [file_id] = result.data["savedFiles"].values()
    run = RunContext(user_id=USER)
    saved = await kernel.files.get(file_id, run)
    assert saved.name == "q4-budget.csv"
    assert await kernel.files.read_bytes(file_id, run) == b"quarter,revenue\nQ4,1090000\n"


async def test_draft_send_and_organize_over_gmail(kernel, connection, gmail):
    drafted = await call(
        kernel, "draftEmail", {"to": ["pavel@fabrikam.com"], "subject": "Figures", "body": "Q4."}
    )
    assert drafted.success, drafted.error
    assert drafted.data["draftId"].startswith("draft:r-58000:") and not gmail.sent
    sent = await call(kernel, "sendEmail", {"draftId": drafted.data["draftId"]})
    assert sent.success, sent.error
    [mime] = gmail.sent
    assert mime["To"] == "pavel@fabrikam.com" and mime["Subject"] == "Figures"
    organized = await call(
        kernel,
        "organizeEmail",
        {"messageId": f"mail:{BUDGET['id']}", "flagged": True, "read": True, "moveTo": "archive"},
    )
    assert organized.success, organized.error
    assert gmail.modified == [
        {"addLabelIds": ["STARRED"], "removeLabelIds": ["UNREAD"]},
        {"addLabelIds": [], "removeLabelIds": ["INBOX"]},
    ]
    assert gmail.messages[BUDGET["id"]]["labelIds"] == ["IMPORTANT", "STARRED"]
    direct = await call(
        kernel, "sendEmail", {"to": ["alex@example.com"], "subject": "Lunch", "body": "Yes!"}
    )
    assert direct.success, direct.error
    assert gmail.requests[-1].url.path == "/gmail/v1/users/me/messages/send"
    assert gmail.sent[-1]["Subject"] == "Lunch" and "Yes!" in gmail.sent[-1].get_payload()
