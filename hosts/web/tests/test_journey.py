"""A person's first day with ``nyla serve``, in headless Chromium (Debian's, through
Playwright) against a real served host on 127.0.0.1, through the page alone: sign in; add a
local folder of 120 text files; switch 🧠 on and watch the page count all 120 as indexed; ask
a question and see the answer with its citation; reload and find the conversation, open it
from the list and continue it; attach a file and ask about it; download a file; remove the
connection — and the page fits a 390 px phone without scrolling sideways.

A screenshot of each step lands in docs/screenshots/ (journey-NN-*.png; ``NYLA_SCREENSHOTS``
names another folder). Skipped, with the reason, where no Chromium is installed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from .browsing import MARKS, holds, page_fixture, served_fixture, shot, watch  # noqa: F401

pytestmark = MARKS

SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
FILES = 120
TOPICS = ["budget", "hiring", "roadmap", "invoices", "meetings", "support"]
TRAVEL = "The travel policy allows second class train tickets for every business trip."
#: the demo model's words stream fast: the journey waits for four answers
MODEL_DELAY = 0.02
ATTACHED = b"Packing list for the Zurich offsite: badge, laptop, umbrella.\n"


@pytest.fixture
def folder(tmp_path) -> Path:
    """A folder of 120 small text files; one of them is about the travel policy."""
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(FILES - 1):
        topic = TOPICS[i % len(TOPICS)]
        text = f"Note {i} about {topic}: the {topic} review of week {i % 52} went as planned.\n"
        (root / f"note-{i:03d}.txt").write_text(text)
    (root / "travel-policy.txt").write_text(TRAVEL + "\n")
    return root


async def step(page, number: int, name: str) -> None:
    await shot(page, f"journey-{number:02d}-{name}", SCREENSHOTS)


async def test_a_persons_journey(served, page, folder):
    server, token = served
    api = httpx.AsyncClient(
        base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {token}"}
    )
    async with api:
        refused = watch(page)
        await _sign_in(page, server, token)
        connection_id = await _add_the_folder(page, api, folder)
        await _index_all_of_it(page)
        conversation_id = await _ask_with_a_citation(page)
        await _reload_reopen_continue(page, conversation_id)
        await _attach_and_ask(page, api, conversation_id)
        await _download(page)
        await _fits_a_phone(page, conversation_id)
        await _remove_the_connection(page, api, connection_id)
    assert refused == [], refused


async def _sign_in(page, server, token) -> None:
    await page.goto(server.url + "/")
    await page.wait_for_selector("#signin-form")
    await step(page, 1, "signin")
    await page.fill("#token", token)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#view-chat:not([hidden])")


async def _add_the_folder(page, api, folder: Path) -> str:
    """The form is made from the connector's declared fields: a folder field (the signed-in
    person is a sysadmin, who may point the server at a folder); a folder that is no folder
    is refused with the server's reason, and nothing is stored."""
    await page.click(".tab[data-view=sources]")
    await page.select_option("#new-service", "localfs")
    folder_field = page.locator("#connect-root")
    assert await page.text_content("label[for=connect-root]") == "Folderadmin"  # label + badge
    await folder_field.fill(str(folder / "missing"))
    await page.fill("#connect-label", "My notes")
    await page.click("#connect-submit")
    await page.wait_for_selector("#connect-error:not(:empty)")
    assert (await api.get("/api/connections")).json()["connections"] == []
    assert await folder_field.input_value() == str(folder / "missing")  # nothing lost
    await step(page, 2, "refused")
    await folder_field.fill(str(folder))
    await page.click("#connect-submit")
    card = page.locator(".connection", has_text="My notes")
    await card.wait_for()
    assert "Connected My notes" in await page.text_content("#sources-message")
    (connection,) = (await api.get("/api/connections")).json()["connections"]
    assert connection["settings"]["root"] == str(folder)
    await step(page, 3, "connected")
    return connection["id"]


async def _index_all_of_it(page) -> None:
    """🧠 on the whole connection; then only the page's own progress text is watched until
    it counts all 120 files (a first slice of 50, then the rest, with nothing touched)."""
    await page.click(".connection .node.root button.rag")
    await page.wait_for_selector(".connection .node button.rag[aria-pressed=true]")
    await holds(page, "document.querySelector('#tree .sync .progress')")
    await step(page, 4, "indexing")
    await holds(
        page,
        "document.querySelector('#tree .sync .progress')?.textContent"
        f".startsWith('{FILES} items indexed')",
        attempts=300,
        pause=0.1,
    )
    assert await page.get_attribute("#tree .sync", "data-running") == "false"
    await step(page, 5, "indexed")


async def _ask_with_a_citation(page) -> str:
    """The welcome names the connected folder; the answer cites the travel-policy file."""
    await page.click(".tab[data-view=chat]")
    await page.wait_for_selector("#welcome:not([hidden]) .welcome-connections")
    assert "My notes" in await page.text_content("#welcome")
    assert await page.input_value("#model") == "demo:echo"  # the default, preselected
    await step(page, 6, "welcome")
    await page.fill("#prompt", "What does the travel policy allow for a business trip?")
    await page.keyboard.press("Enter")
    answer = page.locator(".msg.assistant").last
    await answer.locator(".answer.final").wait_for()
    await answer.locator(".citations li", has_text="travel-policy.txt").wait_for()
    assert (await answer.locator(".answer").text_content()).startswith("You asked: What does")
    await holds(page, "location.hash.startsWith('#chat/')")
    conversation_id = (await page.evaluate("location.hash")).split("/", 1)[1]
    await page.locator(f".conversation[data-id='{conversation_id}']").wait_for()
    await step(page, 7, "answer")
    return conversation_id


async def _reload_reopen_continue(page, conversation_id: str) -> None:
    """A reload shows the same conversation (answer and citation); a new one is empty; the
    list reopens the first, and it goes on from there."""
    await page.reload()
    await page.locator(".msg.assistant .citations li", has_text="travel-policy.txt").wait_for()
    assert await page.locator(".msg.user").count() == 1
    await page.click("#new-conversation")
    await holds(page, "location.hash === '#chat'")
    await holds(page, "document.querySelectorAll('#transcript .msg').length === 0")
    await page.click(f".conversation[data-id='{conversation_id}'] a.open")
    await page.locator(".msg.assistant .answer.final").wait_for()
    assert await page.locator(".msg.user").count() == 1
    await page.fill("#prompt", "And for trips abroad?")
    await page.click("#send")
    await holds(page, "document.querySelectorAll('.msg.assistant .answer.final').length === 2")
    assert "And for trips abroad?" in await page.locator(".msg.assistant").last.text_content()
    await step(page, 8, "continued")


async def _attach_and_ask(page, api, conversation_id: str) -> None:
    await page.set_input_files(
        "#attach-input",
        files=[{"name": "packing-list.txt", "mimeType": "text/plain", "buffer": ATTACHED}],
    )
    await page.locator("#attachments .chip", has_text="packing-list.txt").wait_for()
    await page.fill("#prompt", "What is on the attached packing list?")
    await page.click("#send")
    await holds(page, "document.querySelectorAll('.msg.assistant .answer.final').length === 3")
    await page.locator(".msg.user .chip", has_text="packing-list.txt").wait_for()
    # the prompt names the attached file, so the agent's file tool finds it
    answer = await page.locator(".msg.assistant .answer").last.text_content()
    assert "The tool said: 1 files" in answer and "packing-list.txt" in answer
    assert await page.locator("#attachments .chip").count() == 0
    stored = (await api.get(f"/api/conversations/{conversation_id}")).json()
    asked = [m for m in stored["messages"] if m["role"] == "user"][-1]
    assert [f["name"] for f in asked["files"]] == ["packing-list.txt"]
    await step(page, 9, "attached")


async def _download(page) -> None:
    """The Files view lists the upload; its download is a signed link (no token in it)."""
    await page.click(".tab[data-view=files]")
    row = page.locator("#files-table tbody tr", has_text="packing-list.txt")
    await row.wait_for()
    await step(page, 10, "files")
    async with page.expect_download() as info:
        await row.locator("button.download").click()
    download = await info.value
    assert download.suggested_filename == "packing-list.txt"
    assert "signature=" in download.url and "nyla_" not in download.url
    assert Path(await download.path()).read_bytes() == ATTACHED


async def _fits_a_phone(page, conversation_id: str) -> None:
    """At 390 px no view scrolls sideways (each measured once its data is shown)."""
    await page.set_viewport_size({"width": 390, "height": 844})
    views = {
        f"chat/{conversation_id}": ".msg.assistant .citations li",
        "sources": f".connection .sync[data-indexed='{FILES}']",
        "files": "#files-table tbody tr[data-id]",
        "inventory": "#inventory-table .total-files",
    }
    for view, shown in views.items():
        await page.evaluate(f"location.hash = '#{view}'")
        await page.wait_for_selector(f"#view-{view.split('/')[0]}:not([hidden]) {shown}")
        width = await page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= 390, f"#{view} is {width} px wide at 390 px"
        if view.startswith("chat"):
            await step(page, 11, "phone")
        if view == "sources":
            await step(page, 12, "phone-sources")
            await page.click(".connection .node[data-path='/'] button.gear")
            await page.wait_for_selector("#settings-modal[open] #limits input")
            right = await page.evaluate(
                "document.querySelector('#settings-modal').getBoundingClientRect().right"
            )
            assert right <= 390 and await page.evaluate(
                "document.scrollingElement.scrollWidth <= 390"
            )
            await page.click("#settings-form button[value=close]")
    await page.set_viewport_size({"width": 1180, "height": 760})


async def _remove_the_connection(page, api, connection_id: str) -> None:
    await page.evaluate("location.hash = '#sources'")
    card = page.locator(f".connection[data-id='{connection_id}']")
    await card.locator("button.remove").click()
    await page.wait_for_selector("#confirm-modal[open]")
    assert "My notes" in await page.text_content("#confirm-text")
    await page.click("#confirm-ok")
    await card.wait_for(state="detached")
    assert "Removed My notes" in await page.text_content("#sources-message")
    assert (await api.get("/api/connections")).json()["connections"] == []
    await step(page, 13, "removed")
