"""The SDK's path helpers: every hostile value of the shared table is refused or confined,
real names and vendor ids pass unchanged, and the vendor HTTP layer refuses a request whose
path left its base, whichever connector built it."""

from __future__ import annotations

import httpx
import pytest

from nyla.connections.tooling import connector_failure
from nyla.sdk import UnsafePathError as PublicUnsafePathError
from nyla.sdk.connectors import (
    UnsafePathError,
    VendorBadRequestError,
    confine_path,
    confine_url,
    safe_segment,
    url_path,
    url_segment,
)
from nyla.testing.hostile_ids import HOSTILE, Hostile, wire_context

TRAVERSALS = [h for h in HOSTILE if h.traversal]
QUOTABLES = [h for h in HOSTILE if not h.traversal]


def test_the_table_has_at_least_forty_values() -> None:
    assert len(HOSTILE) >= 40 and len(TRAVERSALS) >= 30
    assert PublicUnsafePathError is UnsafePathError
    assert issubclass(UnsafePathError, VendorBadRequestError)


@pytest.mark.parametrize("hostile", TRAVERSALS, ids=lambda h: h.label)
def test_every_traversal_is_refused_as_a_path_and_as_an_id(hostile: Hostile) -> None:
    with pytest.raises(UnsafePathError):
        confine_path("/share", hostile.value)
    with pytest.raises(UnsafePathError):
        confine_path("", "reports", hostile.value)
    with pytest.raises(UnsafePathError):
        url_segment(hostile.value)


@pytest.mark.parametrize("hostile", QUOTABLES, ids=lambda h: h.label)
def test_other_values_stay_below_the_root_and_inside_one_segment(hostile: Hostile) -> None:
    path = confine_path("/share", hostile.value)
    assert path.startswith("/share/") and "/../" not in path + "/"
    encoded = url_path(confine_path("", hostile.value))
    assert "?" not in encoded and "#" not in encoded
    if "/" not in hostile.value:
        quoted = url_segment(hostile.value)
        assert "/" not in quoted and "?" not in quoted and "#" not in quoted


@pytest.mark.parametrize(
    "name",
    [
        "Q3 report (final).pdf",
        ".hidden",
        "a..b",
        "résumé – 2026.docx",
        "日本語.txt",
        "100%.txt",
        "x%41y.txt",
        "emoji \U0001f600.md",
        "file\udcff-from-a-latin1-disk",  # a local name that is not UTF-8 (surrogate escapes)
    ],
)
def test_real_names_pass_unchanged(name: str) -> None:
    assert safe_segment(name) == name
    assert confine_path("/root", "folder", name) == f"/root/folder/{name}"


@pytest.mark.parametrize(
    "vendor_id",
    [
        "AAMkAGI2TG93AAA=",  # Outlook
        "01BYE5RZ6QN3ZWBTUFOFD3GSPGOHDJD36K",  # OneDrive
        "contoso.sharepoint.com,2C712604-1370-44E7-A1F5-426573FDA80A,2D2244C3",  # site
        "1Bxi-MVs0XRA5nFMdKvBd_BZjgmUUqptlbs74OgvE2upms",  # Drive
        "en.swiss#holiday@group.v.calendar.google.com",  # Calendar
        "NYLA-12",
        "86c0abc1",
    ],
)
def test_vendor_ids_become_one_segment(vendor_id: str) -> None:
    quoted = url_segment(vendor_id)
    assert "/" not in quoted and "#" not in quoted
    assert httpx.URL(f"https://x.example/items/{quoted}").path == f"/items/{vendor_id}"


def test_paths_are_normalised_below_the_root() -> None:
    assert confine_path("/share/", "/a//./b/", "c") == "/share/a/b/c"
    assert confine_path("/share", "") == "/share"
    assert confine_path("", "/") == ""
    assert url_path("a b/c?d#e") == "a%20b/c%3Fd%23e"
    with pytest.raises(UnsafePathError, match="bytes long"):
        safe_segment("é" * 200)


@pytest.mark.parametrize(
    ("ref", "ok"),
    [
        ("/calendars/u%40x/work/1.ics", True),
        ("work/2.ics", True),
        ("https://sync.example/calendars/u%40x/", True),
        ("https://evil.example/calendars/u%40x/1.ics", False),
        ("//evil.example/x", False),
        ("https://sync.example@evil.example/", False),
        ("http://sync.example/calendars/u%40x/1.ics", False),
        ("/calendars/other%40x/1.ics", False),
        ("/calendars/u%40x/../other/1.ics", False),
        ("/calendars/u%40x/%2e%2e/other/1.ics", False),
        ("/calendars/u%40xy/1.ics", False),
        ("/calendars/u%40x/a\\..\\..\\b", False),
        ("/calendars/u%40x/a\x00", False),
    ],
)
def test_links_stay_on_their_host_and_below_their_path(ref: str, ok: bool) -> None:
    base = "https://sync.example/calendars/u%40x/"
    if ok:
        assert confine_url(base, ref).startswith(base.rstrip("/"))
    else:
        with pytest.raises(UnsafePathError):
            confine_url(base, ref)


def _ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={})


@pytest.mark.parametrize(
    "url",
    [
        "/../bob/secret.txt",
        "/a/../../bob",
        "/%2e%2e/bob",
        "/a/%2E%2E%2Fb",
        "/a/%252e%252e/b",
    ],
)
async def test_the_http_layer_refuses_a_path_that_left_its_base(url: str) -> None:
    ctx = wire_context("webdav", _ok, base_url="https://dav.example/remote.php/dav/files/ada/")
    with pytest.raises(UnsafePathError):
        await ctx.http.request("PROPFIND", url)
    assert ctx.requests == [] and ctx.http.stats.requests == 0


async def test_the_http_layer_sends_what_stays_inside() -> None:
    ctx = wire_context("webdav", _ok, base_url="https://dav.example/remote.php/dav/files/ada/")
    await ctx.http.request("PROPFIND", "/reports/q3.txt")
    await ctx.http.request("GET", "https://cdn.example/download?token=x")  # a vendor's link
    assert [r.url.path for r in ctx.requests] == [
        "/remote.php/dav/files/ada/reports/q3.txt",
        "/download",
    ]


def test_the_tool_layer_answers_unsafe_paths_structurally() -> None:
    result = connector_failure(UnsafePathError("webdav: the name '..' is a dot segment"))
    assert not result.success and result.error_details is not None
    assert result.error_details.code == "UNSAFE_PATH"
    assert "listing" in (result.error_details.suggestion or "")
