"""An administrator manages who may use what, and a person without a permission reads why,
in headless Chromium against a served host (``nyla serve`` with the demo model).

Alice (system admin) opens the Access page and revokes the agent for Bob; the rule shows in
the list. Bob signs in: the chat refuses his question in plain words, and the Access page says
what he may and may not use and that only an admin changes it (no rule form for him). Alice
removes the rule; Bob asks again and gets the answer. Carol, admin of Bob's organisation, may
only write her organisation's rules; her revoke of the knowledge store reaches Bob. Screenshots:
docs/screenshots/access-NN-*.png."""

from __future__ import annotations

from pathlib import Path

from nyla_host.tokens import TokenStore

from .browsing import (  # noqa: F401
    MARKS,
    holds,
    page_fixture,
    served_fixture,
    shot,
    sign_in,
    watch,
)

pytestmark = MARKS

SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
MODEL_DELAY = 0.01


async def ask(page, prompt: str) -> None:
    await page.fill("#prompt", prompt)
    await page.click("#send")


async def test_an_admin_revokes_the_agent_and_the_user_reads_the_refusal(served, page):
    server, alice = served
    db = server.database()
    try:
        bob, _ = await TokenStore(db).create("bob", role="user", mandate_id="m1", name="e2e")
        carol, _ = await TokenStore(db).create(
            "carol", role="mandateAdmin", mandate_id="m1", name="e2e"
        )
    finally:
        await db.dispose()
    refused = watch(page)

    # Alice opens the Access page: she may use everything, and no rule exists yet
    await sign_in(page, server.url, alice)
    await page.click(".tab[data-view=access]")
    await page.wait_for_selector("#access-admin:not([hidden])")
    await holds(page, "document.querySelectorAll('#access-mine li').length >= 3")
    assert "You may run the agent" in await page.text_content("#access-mine")
    # the rules come in a request of their own, after the person's permissions
    await holds(
        page, "document.querySelector('#access-rules tbody').textContent.includes('No rules')"
    )

    # she revokes the agent for Bob
    await page.select_option("#access-kind", "user")
    await page.fill("#access-subject", "bob")
    await page.select_option("#access-permission", "service.agent")
    await page.click("#access-revoke")
    await page.wait_for_selector("#access-rules tr[data-subject=bob]")
    row = await page.text_content("#access-rules tr[data-subject=bob]")
    assert "run the agent" in row and "may not" in row
    assert "User bob may not run the agent now." in await page.text_content("#access-done")
    await shot(page, "access-01-revoked", SCREENSHOTS)

    # Bob asks a question: refused, in plain words, with nothing of the run started
    await sign_in(page, server.url, bob)
    await ask(page, "Hello, what can you do?")
    await page.wait_for_selector(".msg.assistant .run-error")
    message = await page.text_content(".msg.assistant .run-error")
    assert "You may not run the agent" in message and "Ask an administrator" in message
    await shot(page, "access-02-refused", SCREENSHOTS)

    # his Access page says what he may and may not use, and offers him no rule form
    await page.click(".tab[data-view=access]")
    await page.wait_for_selector("#access-not-admin:not([hidden])")
    assert await page.is_hidden("#access-admin")
    mine = await page.text_content("#access-mine")
    assert "You may not run the agent" in mine and "You may use the knowledge store" in mine
    await shot(page, "access-03-user", SCREENSHOTS)

    # Alice removes the rule; Bob's next question is answered
    await sign_in(page, server.url, alice)
    await page.click(".tab[data-view=access]")
    await page.wait_for_selector("#access-rules tr[data-subject=bob]")
    await page.click("#access-rules tr[data-subject=bob] button")
    await holds(page, "!document.querySelector('#access-rules tr[data-subject=bob]')")
    assert "Rule removed" in await page.text_content("#access-done")
    await sign_in(page, server.url, bob)
    await ask(page, "Hello again")
    await page.wait_for_selector(".msg.assistant .answer.final")
    assert not await page.query_selector(".msg.assistant .run-error")

    # Carol, Bob's organisation admin, manages her organisation's rules only
    await sign_in(page, server.url, carol)
    await page.click(".tab[data-view=access]")
    await page.wait_for_selector("#access-admin:not([hidden])")
    kinds = await page.eval_on_selector_all("#access-kind option", "o => o.map(x => x.value)")
    assert kinds == ["mandate"] and await page.input_value("#access-subject") == "m1"
    await page.select_option("#access-permission", "service.knowledge")
    await page.click("#access-revoke")
    await page.wait_for_selector("#access-rules tr[data-subject=m1]")
    assert "may not" in await page.text_content("#access-rules tr[data-subject=m1]")
    await shot(page, "access-04-mandate-admin", SCREENSHOTS)
    await sign_in(page, server.url, bob)
    await page.click(".tab[data-view=access]")
    await holds(
        page,
        "document.querySelector('#access-mine').textContent.includes('You may not use the knowledge store')",
    )
    assert refused == []
