"""A person's journey with an interrupted run (issue 37): the server dies while the agent
works on their question, after a writing tool had started; once a server is back, the chat
shows the interruption with a button to run it again, which first lists the changes that may
or may not have been made and asks the person to confirm they checked them; the run then goes
again in the same conversation and answers. Headless Chromium against ``nyla serve``."""

from __future__ import annotations

import json

import httpx
from sqlalchemy import text

from .browsing import MARKS, holds, page_fixture, served_fixture, watch  # noqa: F401

pytestmark = MARKS

#: the first server's model never answers in time: the run is surely mid-round when it dies
MODEL_DELAY = 600.0
WRITE = {"callId": "c9", "toolName": "bookRoom", "round": 1}


async def test_an_interrupted_run_is_run_again_after_its_writes_are_confirmed(served, page):
    server, token = served
    refused = watch(page)
    await page.goto(server.url + "/")
    await page.fill("#token", token)
    await page.click("#signin-form button")
    await page.wait_for_selector("#view-chat:not([hidden])")
    await page.fill("#prompt", "book the meeting room for friday")
    await page.click("#send")
    await holds(page, "document.querySelector('.msg.assistant')?.dataset.run")
    run_id = await page.get_attribute(".msg.assistant", "data-run")
    api = httpx.AsyncClient(
        base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {token}"}
    )
    async with api:
        assert (await api.get(f"/api/runs/{run_id}")).json()["status"] == "running"
    # the server dies while a writing call is under way (recorded before its handler ran)
    server.kill()
    db = server.database()
    try:
        async with db.session() as s:
            await s.execute(
                text("UPDATE host_runs SET started_writes = CAST(:w AS jsonb) WHERE run_id = :r"),
                {"w": json.dumps([WRITE]), "r": run_id},
            )
    finally:
        await db.dispose()
    server.start(delay_s=0.01)  # a server again: it ends the dead one's run, interrupted
    # the page's stream reconnects by itself and shows the interruption, with a way on
    offer = f".msg.assistant[data-run='{run_id}'] .resume button.resume-run"
    await page.wait_for_selector(offer)
    assert "bookRoom (call c9)" in await page.text_content(f".msg.assistant[data-run='{run_id}']")
    await page.reload()  # a conversation opened again offers it too
    await page.wait_for_selector(offer)
    await page.click(offer)
    # first the changes the stopped run may or may not have made, to be checked
    await page.wait_for_selector(".resume .unfinished-writes li")
    writes = await page.locator(".resume .unfinished-writes li").all_text_contents()
    assert writes == ["bookRoom (call c9, round 1)"]
    async with httpx.AsyncClient(
        base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {token}"}
    ) as api:
        runs = (await api.get("/api/runs")).json()
        assert len(runs["runs"]) == 1, "nothing ran again before the person confirmed"
        await page.click(".resume button.confirm-writes")
        await holds(page, "document.querySelectorAll('.msg.assistant .answer.final').length === 1")
        await holds(page, "document.querySelector('#transcript').dataset.running === 'false'")
        again = await page.evaluate(
            "[...document.querySelectorAll('.msg.assistant')].pop().dataset.run"
        )
        assert again and again != run_id
        shown = (await api.get(f"/api/runs/{again}")).json()
        assert shown["status"] == "completed"
        assert shown["prompt"] == "book the meeting room for friday"
        assert await page.locator(".resume").count() == 0
        await page.reload()  # the answer is the conversation's last: nothing to resume
        await holds(page, "document.querySelectorAll('.msg.assistant').length === 2")
        assert await page.locator(".resume").count() == 0
    assert refused == [], refused
