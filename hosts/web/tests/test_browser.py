"""The web page in headless Chromium (Playwright driving Debian's ``chromium``) against
``nyla serve`` on 127.0.0.1: sign in; toggle 🧠 on a node → the job shows in the badge → the
inventory lists the files; the settings modal's limit moves the estimate; the partial banner's
"Adjust limit" opens the same modal; withdrawing consent asks first and the 🧠 buttons follow;
a chat run streams, shows its tool call and cost, and survives a page reload mid-run; the
conversation is renamed and deleted from the list; Markdown is rendered safely; the connect
form follows each connector's declaration (OAuth sign-in with PKCE leaves for the provider and
its refusal comes back to the page; a token field; a server-only field only for a sysadmin).

Skipped, with the reason, where no Chromium is installed (``.ci/run`` installs Debian's).
Set ``NYLA_SCREENSHOTS=DIR`` to keep a screenshot of each page there (docs/screenshots)."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from nyla_host.tokens import TokenStore

from .browsing import MARKS, holds, page_fixture, served_fixture, shot, watch  # noqa: F401

pytestmark = MARKS
#: the Microsoft connector's OAuth app: its sign-in can start (the provider is faked in the
#: browser; the page only has to leave for it and take its answer back)
SERVED_ENV = {"NYLA_MSFT_CLIENT_ID": "e2e-client"}


async def until(api, path: str, condition, attempts: int = 200) -> dict:
    """Poll ``path`` until ``condition(json)`` holds (a condition, not a sleep, decides)."""
    for _ in range(attempts):
        data = (await api.get(path)).json()
        if condition(data):
            return data
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} never met the condition: {data}")


async def test_the_page_end_to_end(served, page):
    server, token = served
    api = httpx.AsyncClient(
        base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {token}"}
    )
    async with api:
        connection = (
            await api.post("/api/connections", json={"service": "memfs", "label": "Team share"})
        ).json()
        refused = watch(page)
        await _sign_in(page, server, token)
        docs = await _index_a_folder(page, api, server, connection)
        node = page.locator(f".node[data-id='{docs['id']}']")
        indent = page.locator(f".connection > .node[data-id='{docs['id']}']")
        # the tree's indent is set through the CSSOM: the policy refuses style attributes
        assert await indent.evaluate("n => getComputedStyle(n).paddingLeft") == "16px"
        await _settings_lower_the_estimate(page, api, node, docs)
        await _a_limited_sync_opens_the_settings(page, api, node, docs)
        await _withdrawing_consent_asks_first(page, api, node, connection)
        await _chat_streams_and_resumes(page, api)
        await _rename_and_delete_the_conversation(page, api)
        await _markdown_is_rendered_safely(page)
        await _oauth_leaves_and_comes_back(page)
        await _a_user_sees_no_server_fields(page, server)
    assert refused == [], refused


async def _sign_in(page, server, token) -> None:
    response = await page.goto(server.url + "/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    await shot(page, "signin")
    await page.fill("#token", token)
    await page.click("#signin-form button")
    await page.wait_for_selector("#view-chat:not([hidden])")
    assert "Europe/Zurich" in await page.text_content("#who")  # the browser's zone, sent
    await page.focus(".skip")  # the keyboard's first stop skips the header
    await page.keyboard.press("Enter")
    assert await page.evaluate("document.activeElement.id") == "main"
    assert await page.evaluate("location.hash") == "#chat"


async def _index_a_folder(page, api, server, connection) -> dict:
    """The tree: toggle 🧠 → the running job shows in the badge and on its row (with Stop) →
    released → its count on the row → "Sync now" syncs again → inventory (the folder comes
    from the connector's browse; switching it on makes it a data source)."""
    await page.click(".tab[data-view=sources]")
    await page.click(f".connection[data-id='{connection['id']}'] .browse-box summary")
    await page.click(".browse-node[data-path='/docs'] button.rag")
    await page.wait_for_selector("#jobs-badge:not([hidden])")
    tree = (await api.get(f"/api/connections/{connection['id']}/tree")).json()
    docs = tree["dataSources"][0]
    assert (docs["path"], docs["label"], docs["ragIndexEnabled"]) == ("/docs", "docs", True)
    node = page.locator(f".node[data-id='{docs['id']}']")
    await page.wait_for_selector(
        ".browse-node[data-path='/docs'] > .node button.rag[aria-pressed=true]"
    )
    assert "Indexing" in await page.text_content("#jobs-badge")
    assert await node.locator("button.rag").get_attribute("aria-pressed") == "true"
    await node.locator(".sync button.stop").wait_for()  # the held job, with its Stop
    assert (await node.locator(".sync .progress").text_content()).startswith("Indexing…")
    await shot(page, "sources")
    server.release.write_text("go")
    await page.wait_for_selector("#jobs-badge[hidden]", state="attached")
    await node.locator(".sync .progress", has_text="2 items indexed").wait_for()
    path = f"/api/datasources/{docs['id']}"
    synced = (await api.get(path)).json()["sync"]["lastSyncAt"]
    await node.locator(".sync button.sync-now").click()
    await until(api, path, lambda d: d["sync"]["lastSyncAt"] not in (None, synced))
    await page.click(".tab[data-view=inventory]")
    await holds(page, "document.querySelector('.total-files')?.textContent === '2'")
    return docs


async def _settings_lower_the_estimate(page, api, node, docs) -> None:
    """The settings modal: human labels; a smaller byte limit lowers the estimate;
    neutralization is set and inherited again."""
    await page.click(".tab[data-view=sources]")
    await node.locator("button.gear").click()
    await page.wait_for_selector("#settings-modal[open]")
    await holds(page, "document.querySelector('#estimate').dataset.tokens")
    before = int(await page.get_attribute("#estimate", "data-tokens"))
    assert "CHF" in await page.text_content("#estimate")
    # below what the two files hold (the estimate is sized by the source where known)
    await page.fill("#limits input[name=maxBytes]", "0.0001")
    await holds(page, f"Number(document.querySelector('#estimate').dataset.tokens) < {before}")
    stored = (await api.get(f"/api/datasources/{docs['id']}")).json()
    assert stored["settings"]["ragLimits"]["maxBytes"] == round(0.0001 * 1024 * 1024)
    assert await page.text_content("label[for=limit-maxBytes]") == "Max. data per sync"
    await shot(page, "settings")
    # neutralization set here, then inherited again (revertible as 🧠 is)
    await page.select_option("#policy-neutralize", "true")
    await page.locator("#policy-result", has_text="Saved").wait_for()
    stored = (await api.get(f"/api/datasources/{docs['id']}")).json()
    assert (stored["neutralize"], stored["neutralizeEffective"]) == (True, True)
    await page.click("#settings-form button[value=close]")
    await node.locator(".badge", has_text="neutralized").wait_for()
    await node.locator("button.gear").click()
    await page.select_option("#policy-neutralize", "")
    await page.locator("#policy-result", has_text="Saved").wait_for()
    stored = (await api.get(f"/api/datasources/{docs['id']}")).json()
    assert (stored["neutralize"], stored["neutralizeEffective"]) == (None, False)
    await page.click("#settings-form button[value=close]")
    await page.wait_for_selector("#jobs-badge[hidden]", state="attached")


async def _a_limited_sync_opens_the_settings(page, api, node, docs) -> None:
    """A sync that stopped at a limit: the banner's button opens the same modal (a byte limit
    below the two tiny files' sizes, set through the API: the modal counts in MB)."""
    limited = await api.patch(
        f"/api/datasources/{docs['id']}/settings", json={"ragLimits": {"maxBytes": 70}}
    )
    assert limited.status_code == 200, limited.text
    await node.locator("button.rag").click()  # off (purge, asked first) ...
    await page.wait_for_selector("#confirm-modal[open]")
    assert "removed from the knowledge store" in await page.text_content("#confirm-text")
    await page.click("#confirm-ok")
    await page.wait_for_selector(f".node[data-id='{docs['id']}'] button.rag[aria-pressed=false]")
    await node.locator("button.rag").click()  # ... and on again: one item, then the limit
    await until(api, "/api/rag/inventory/me", lambda inv: inv["partial"])
    await page.click(".tab[data-view=inventory]")
    banner = page.locator("#partial .banner")
    await banner.wait_for()
    assert "docs" in await banner.text_content()
    await page.wait_for_selector("#jobs-badge[hidden]", state="attached")
    await shot(page, "inventory")
    await banner.locator("button").click()
    await page.wait_for_selector("#settings-modal[open]")
    shown_mb = float(await page.input_value("#limits input[name=maxBytes]"))
    assert round(shown_mb * 1024 * 1024) == 70  # the stored bytes, shown in MB
    await page.click("#settings-form button[value=close]")


async def _chat_streams_and_resumes(page, api) -> None:
    """Chat: the tool call shows, the answer streams, a reload mid-run resumes it; Stop
    cancels the next run."""
    await page.click(".tab[data-view=chat]")
    await page.fill("#prompt", "Which files do I have?")
    await page.click("#send")
    await page.wait_for_selector(".msg.assistant .tool.call")
    await holds(page, "document.querySelector('.msg.assistant .answer').textContent.length > 0")
    run_id = await page.get_attribute(".msg.assistant", "data-run")
    assert (await api.get(f"/api/runs/{run_id}")).json()["status"] == "running"
    await page.reload()
    await page.wait_for_selector(".msg.assistant .answer.final")
    answer = await page.text_content(".msg.assistant .answer")
    assert answer.startswith("You asked: Which files do I have?")
    assert answer.count("You asked") == 1  # replayed once, not duplicated
    assert "CHF" in await page.text_content(".msg.assistant .summary")
    conversation_id = page.url.split("#chat/", 1)[1]  # the address names the conversation
    listed = (await api.get("/api/conversations")).json()["conversations"]
    assert conversation_id in [c["id"] for c in listed]
    assert await page.locator(".msg.assistant .tool.call").count() == 1
    assert await page.text_content(".msg.user") == "Which files do I have?"
    await shot(page, "chat")
    # the same conversation goes on; Stop ends the run that streams
    await page.fill("#prompt", "Tell me more about them, in many words")
    await page.click("#send")
    second = page.locator(".msg.assistant").nth(1)
    await second.locator(".answer", has_text="You asked").wait_for()
    await page.click("#cancel")
    stopped = await second.get_attribute("data-run")
    await until(api, f"/api/runs/{stopped}", lambda r: r["status"] == "cancelled")
    await page.wait_for_selector("#cancel", state="hidden")
    assert page.url.endswith(f"#chat/{conversation_id}")


async def markdown_html(page, text: str) -> str:
    """What the page's Markdown module makes of ``text``, serialised."""
    return await page.evaluate(
        """async (text) => {
            const { render } = await import('/static/markdown.js');
            const box = document.createElement('div');
            box.append(render(text));
            return box.innerHTML;
        }""",
        text,
    )


async def _markdown_is_rendered_safely(page) -> None:
    rendered = await markdown_html(
        page, "# Title\n- **bold** and `code`\n- <img src=x onerror=alert(1)>"
    )
    assert rendered.startswith("<h3>Title</h3><ul><li><strong>bold</strong> and <code>code</code>")
    assert "<img" not in rendered and "&lt;img src=x onerror=alert(1)&gt;" in rendered
    table = await markdown_html(page, "| a | b |\n|---|--:|\n| [x](https://e.org) | 2 |")
    assert (
        "<table><thead><tr><th>a</th>" in table and '<td style="text-align: right;">2</td>' in table
    )
    assert '<a href="https://e.org" target="_blank" rel="noopener noreferrer">x</a>' in table
    for hostile in ("javascript:alert(1)", "data:text/html,x", "//evil.example/x", "JaVaScRiPt:x"):
        links = await markdown_html(page, f"[click]({hostile})")
        assert "<a" not in links and "click" in links, links
    relative = await markdown_html(
        page, "[doc](/api/files/f1/download?x=1) and https://a.example/b."
    )
    assert '<a href="/api/files/f1/download?x=1"' in relative
    assert '<a href="https://a.example/b" target="_blank"' in relative
    judged = await page.evaluate(
        """async (hrefs) => {
            const { safeHref } = await import('/static/markdown.js');
            return hrefs.map(safeHref);
        }""",
        ["java\tscript:alert(1)", "/\\evil.example/x", " https://ok.example/ ", "notes/a.md"],
    )
    assert judged == [None, None, "https://ok.example/", "notes/a.md"]
    fenced = await markdown_html(page, "```html\n<script>alert(1)</script>\n```")
    assert (
        fenced == '<pre><code data-lang="html">&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>'
    )


async def _withdrawing_consent_asks_first(page, api, node, connection) -> None:
    """Unticking consent asks before it purges (cancel keeps it); then every 🧠 shows off."""
    await page.click(".tab[data-view=sources]")
    await node.locator("button.gear").click()
    await page.wait_for_selector("#settings-modal[open]")
    await page.uncheck("#consent")
    await page.wait_for_selector("#confirm-modal[open]")
    await page.click("#confirm-cancel")
    await holds(page, "document.querySelector('#consent').checked")
    listed = (await api.get("/api/connections")).json()["connections"]
    assert [c["knowledgeIngestionEnabled"] for c in listed] == [True]
    await page.uncheck("#consent")
    await page.click("#confirm-ok")
    await until(
        api, "/api/connections", lambda d: not d["connections"][0]["knowledgeIngestionEnabled"]
    )
    await page.click("#settings-form button[value=close]")
    await holds(page, "document.querySelectorAll('button.rag[aria-pressed=true]').length === 0")
    assert "consent off" in await page.text_content(f".connection[data-id='{connection['id']}']")


async def _rename_and_delete_the_conversation(page, api) -> None:
    item = page.locator(".conversation").first
    conversation_id = await item.get_attribute("data-id")
    await item.locator("button[aria-label^=Rename]").click()
    await page.fill(".rename input", "Files I have")
    await page.keyboard.press("Enter")
    await page.locator(".conversation a.open", has_text="Files I have").wait_for()
    shown = (await api.get(f"/api/conversations/{conversation_id}")).json()
    assert shown["title"] == "Files I have"
    assert await page.text_content("#conversation-title") == "Files I have"
    await page.locator(".conversation").first.locator("button[aria-label^=Delete]").click()
    assert "Files I have" in await page.text_content("#confirm-text")
    await page.click("#confirm-ok")
    await page.locator(".conversation").wait_for(state="detached")
    await holds(page, "location.hash === '#chat'")
    assert (await api.get("/api/conversations")).json()["conversations"] == []


async def _oauth_leaves_and_comes_back(page) -> None:
    """ "Sign in with Microsoft 365" leaves for the provider's authorize URL (PKCE S256, a
    state); the provider's refusal, sent to the callback, comes back as a message."""
    asked: list[str] = []

    async def provider(route):
        asked.append(route.request.url)
        await route.fulfill(status=200, content_type="text/html", body="<p>provider</p>")

    await page.route("https://login.microsoftonline.com/**", provider)
    await page.click(".tab[data-view=sources]")
    await page.select_option("#new-service", "msft")
    assert await page.get_attribute("#connect-baseUrl", "type") == "url"  # a sysadmin's field
    await page.click("#connect-submit")
    await page.wait_for_url("https://login.microsoftonline.com/**")
    query = parse_qs(urlsplit(asked[0]).query)
    assert query["code_challenge_method"] == ["S256"] and query["client_id"] == ["e2e-client"]
    callback = query["redirect_uri"][0]
    refused = urlencode({"state": query["state"][0], "error": "access_denied"})
    await page.goto(f"{callback}?{refused}")
    await page.wait_for_selector("#sources-message.error:not([hidden])")
    assert "Sign-in failed" in await page.text_content("#sources-message")
    assert await page.evaluate("location.hash") == "#sources"
    await page.select_option("#new-service", "clickup")
    assert await page.get_attribute("#connect-token", "type") == "password"


async def _a_user_sees_no_server_fields(page, server) -> None:
    """A plain user is not offered what only a sysadmin may set."""
    db = server.database()
    try:
        token, _ = await TokenStore(db).create("bob", role="user", name="e2e")
    finally:
        await db.dispose()
    await page.evaluate("token => localStorage.setItem('nyla.token', token)", token)
    await page.reload()
    await page.wait_for_selector("#view-sources:not([hidden])")
    await page.select_option("#new-service", "msft")
    assert await page.locator("#connect-baseUrl").count() == 0
    await page.select_option("#new-service", "localfs")
    assert "Only a system administrator" in await page.text_content("#connect-actions")
