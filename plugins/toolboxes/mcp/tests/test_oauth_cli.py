"""``nyla mcp add --oauth``, ``list``, ``logout`` and ``remove`` as a person types them: the
real ``nyla`` process prints the authorization URL and waits on its loopback redirect; the
"browser" (an HTTP client, the test server approving at once) follows it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx

from nyla.testing import invoke_cli

from .conftest import in_loop

NYLA = [sys.executable, "-c", "from nyla.cli import main; main()"]


def test_add_with_oauth_signs_in_lists_and_logout_revokes(store, oauth_base, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["NYLA_HOME"] = str(tmp_path / "home")
    process = subprocess.Popen(
        [*NYLA, "mcp", "add", "secure", "--url", f"{oauth_base}/mcp", "--oauth", "--user", "ada"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = ""
        for line in process.stderr:  # the URL is printed; no browser without a display
            if line.strip().startswith("http"):
                url = line.strip()
                break
        assert url, "no authorization URL printed"
        approved = httpx.get(url, timeout=20)
        assert approved.status_code == 302
        assert httpx.get(approved.headers["location"], timeout=20).status_code == 200
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "mcp:secure: 1 tools" in out

    listed = json.loads(invoke_cli(["mcp", "list", "--user", "ada", "--json"]).output)
    assert listed[0]["tools"] == ["whoami"] and listed[0]["signIn"]["signedIn"] is True
    assert listed[0]["oauth"] == {"clientId": None, "scope": None}
    text = invoke_cli(["mcp", "list", "--user", "ada"]).output
    assert "OAuth: signed in" in text

    done = invoke_cli(["mcp", "logout", "secure", "--user", "ada", "--json"])
    assert json.loads(done.output) == {"name": "secure", "signedOut": True, "revoked": True}
    again = invoke_cli(["mcp", "logout", "secure", "--user", "ada"])
    assert again.exit_code != 0 and "not signed in" in again.output
    assert "OAuth: not signed in" in invoke_cli(["mcp", "list", "--user", "ada"]).output
    assert invoke_cli(["mcp", "remove", "secure", "--user", "ada"]).exit_code == 0


def test_oauth_options_need_oauth_and_a_stdio_server_cannot_have_it(store):
    done = invoke_cli(["mcp", "add", "x", "--url", "http://127.0.0.1:9/mcp", "--scope", "a"])
    assert done.exit_code != 0 and "go with --oauth" in done.output
    done = invoke_cli(["mcp", "add", "x", "--command", "true", "--oauth"])
    assert done.exit_code != 0 and "http servers only" in done.output
    assert in_loop(lambda store: store.servers("local")) == []


def test_removing_a_mandates_oauth_server_signs_its_users_out(store, oauth_base):
    from nyla_toolbox_mcp.cli import add_server
    from nyla_toolbox_mcp.cli_oauth import login_flow

    from .test_oauth import browser, secure

    async def sign_in_both(store) -> None:
        await add_server(store.mandates(), "m1", secure(oauth_base))
        for user in ("ada", "bob"):
            await login_flow(store, "mandate", "m1", "secure", user, show=browser())

    async def tokens_of_both(store) -> list[str | None]:
        grants = [await store.grants.get(u, "secure") for u in ("ada", "bob")]
        return [g.tokens["access_token"] if g else None for g in grants]

    in_loop(sign_in_both)
    tokens = in_loop(tokens_of_both)
    assert all(tokens)
    done = invoke_cli(["mcp", "remove", "secure", "--mandate", "m1", "--json"])
    assert json.loads(done.output) == {"removed": "secure", "signedOut": 2}
    assert in_loop(tokens_of_both) == [None, None]
    live = httpx.get(f"{oauth_base}/test/state", timeout=10).json()["live"]
    assert not set(tokens) & set(live)  # revoked at the authorization server
