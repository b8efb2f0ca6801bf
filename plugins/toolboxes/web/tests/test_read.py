"""readUrl against a real local test site on 127.0.0.1: refused unless the operator allows
that host (NYLA_WEB_ALLOW, empty by default); then the page is read as text without its
scripts, navigation and footer, redirects are followed, and the size cap, the timeout and
the content-type check hold. save=true stores the text as a chat document of the run."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.sdk import RunContext, ToolContext
from nyla.testing import call_tool
from nyla_toolbox_web import web_toolbox
from nyla_toolbox_web.fetch import PageFetcher

USER = "ada"


def _tool(fetcher: PageFetcher | None = None) -> Any:
    return next(t for t in web_toolbox(fetcher).tools if t.name == "readUrl")


async def _call(tool: Any, ctx: ToolContext | None = None, **args: Any) -> Any:
    return await tool.handler(tool.args_model(**args), ctx or ToolContext())


@pytest.fixture
def allow_site(monkeypatch):
    monkeypatch.setenv("NYLA_WEB_ALLOW", "127.0.0.1")


async def test_the_local_site_is_refused_by_default(site, monkeypatch):
    monkeypatch.delenv("NYLA_WEB_ALLOW", raising=False)
    result = await _call(_tool(), url=f"{site}/article")
    assert not result.success
    assert result.error_details.code == "ADDRESS_REFUSED"
    assert "loopback" in result.error


async def test_an_allowed_local_page_is_read_as_text(site, allow_site):
    result = await _call(_tool(), url=f"{site}/article")
    assert result.success, result.error
    text = result.content
    assert text.startswith("# Swiss VAT 2026")
    assert "# Swiss VAT rates" in text and "## Reduced rates" in text
    assert "**8.1 %**" in text and "* Food: 2.6 %" in text
    assert "| Standard | 8.1  |" in text
    assert "Grüezi from Zürich." in text
    for dropped in ("do not read me", "color:red", "Home", "Site banner", "Copyright footer"):
        assert dropped not in text
    assert result.data["title"] == "Swiss VAT 2026"
    assert result.data["contentType"] == "text/html"


async def test_a_redirect_on_the_allowed_host_is_followed(site, allow_site):
    result = await _call(_tool(), url=f"{site}/moved")
    assert result.success, result.error
    assert result.data["finalUrl"] == f"{site}/article"


async def test_plain_text_is_read_as_it_is(site, allow_site):
    result = await _call(_tool(), url=f"{site}/notes.txt")
    assert result.success and result.content == "plain nötes"


async def test_a_non_text_content_type_is_refused(site, allow_site):
    result = await _call(_tool(), url=f"{site}/image.png")
    assert result.error_details.code == "UNSUPPORTED_CONTENT_TYPE"
    assert "image/png" in result.error


async def test_a_page_over_the_size_cap_is_refused(site, allow_site, monkeypatch):
    monkeypatch.setenv("NYLA_WEB_MAX_BYTES", "100000")
    result = await _call(_tool(), url=f"{site}/big")
    assert result.error_details.code == "TOO_LARGE"
    monkeypatch.setenv("NYLA_WEB_MAX_BYTES", "400000")
    assert (await _call(_tool(), url=f"{site}/big")).success


async def test_a_slow_page_times_out(site):
    fetcher = PageFetcher(allowed_hosts=frozenset({"127.0.0.1"}), timeout_s=0.5)
    result = await _call(_tool(fetcher), url=f"{site}/slow")
    assert result.error_details.code == "TIMEOUT"


async def test_an_error_status_is_a_failure(site, allow_site):
    result = await _call(_tool(), url=f"{site}/missing")
    assert result.error_details.code == "HTTP_ERROR" and "404" in result.error


async def test_long_text_is_cut_where_asked(site, allow_site):
    result = await _call(_tool(), url=f"{site}/article", maxChars=500)
    assert result.success
    assert not result.data["truncated"]
    big = await _call(_tool(), url=f"{site}/big", maxChars=1000)
    assert big.data["truncated"] and big.data["chars"] > 1000
    assert big.content.endswith(f"[cut at 1000 of {big.data['chars']} characters]")


async def test_save_stores_the_text_as_a_file_of_the_user(site, allow_site, db, make_kernel):
    import nyla_toolbox_web

    kernel = make_kernel(nyla_toolbox_web, db=db, builtins=True)
    result = await call_tool(kernel, "readUrl", {"url": f"{site}/article", "save": True}, user=USER)
    assert result.success, result.error
    saved = result.data["file"]
    assert saved["name"] == "Swiss VAT 2026.md" and saved["mimeType"] == "text/markdown"
    text = await kernel.files.read_text(saved["fileId"], RunContext(user_id=USER))
    assert text.startswith(f"<{site}/article>\n\n# Swiss VAT 2026")
    assert "Lodging: 3.8 %" in text
