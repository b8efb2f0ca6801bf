"""readUrl refuses every address in a held-out list — loopback, private, link-local, the
metadata services, shared (CGNAT), IPv6 and IPv4-inside-IPv6 forms, hosts written as
decimal, octal or hex numbers, names that resolve to a private address, and redirects to
any of them — before a single byte is sent there; a public name is fetched from the
address that was checked."""

from __future__ import annotations

import pytest

from nyla.sdk import ToolContext
from nyla_toolbox_web import web_toolbox
from nyla_toolbox_web.fetch import PageFetcher

from .conftest import FakeNet, table_resolver

REFUSED = [
    "http://127.0.0.1/",
    "http://127.0.0.2:8080/admin",
    "http://localhost/",
    "http://0.0.0.0/",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://192.168.178.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/",
    # the same places in the number forms old resolvers read
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.0.0.1/",
    "http://127.1/",
    "http://017700000001/",
    "http://0xa9fea9fe/",
    "http://2852039166/",
    # IPv6
    "http://[::1]/",
    "http://[::]/",
    "http://[fe80::1]/",
    "http://[fd00:ec2::254]/",
    "http://[fc00::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[2002:7f00:1::]/",
    # names resolving to private addresses (one bad address is enough)
    "http://intranet.example/",
    "http://sneaky.example/",
    "http://mapped.example/",
    "http://cgnat.example/",
    # a name that resolves to nothing
    "http://nowhere.example/",
    # redirects from a public page
    "http://public.example/to-metadata",
    "http://public.example/to-intranet",
    "http://public.example/to-decimal-loopback",
    "http://public.example/to-v6-loopback",
]

NOT_WEB = ["file:///etc/passwd", "ftp://public.example/x", "gopher://public.example/", "http://"]


def _read_url(net: FakeNet):
    fetcher = PageFetcher(resolve=table_resolver, transport=net.transport())
    return next(t for t in web_toolbox(fetcher).tools if t.name == "readUrl")


async def _call(tool, **args):
    return await tool.handler(tool.args_model(**args), ToolContext())


@pytest.mark.parametrize("url", REFUSED)
async def test_read_url_refuses_the_address(net, url):
    result = await _call(_read_url(net), url=url)
    assert not result.success
    assert result.error_details.code == "ADDRESS_REFUSED", result.error
    assert "refused" in result.error or "resolves to no address" in result.error
    # only the public first hop of a redirect case ever reached the network
    assert all(host == "93.184.216.34" for host, _, _ in net.seen), net.seen


async def test_an_octal_address_httpx_cannot_parse_is_refused_as_invalid(net):
    result = await _call(_read_url(net), url="http://0177.0.0.1/")
    assert not result.success and result.error_details.code == "INVALID_URL"
    assert net.seen == []


@pytest.mark.parametrize("url", NOT_WEB)
async def test_read_url_reads_only_http_addresses(net, url):
    result = await _call(_read_url(net), url=url)
    assert not result.success and result.error_details.code == "INVALID_URL"
    assert net.seen == []


async def test_credentials_in_the_address_are_refused(net):
    result = await _call(_read_url(net), url="http://admin:secret@public.example/")
    assert not result.success and result.error_details.code == "INVALID_URL"


async def test_a_public_name_is_fetched_from_the_address_that_was_checked(net):
    result = await _call(_read_url(net), url="http://public.example/page")
    assert result.success, result.error
    assert "public page" in result.content
    # connected to the checked address, the name kept for the Host header
    assert net.seen == [("93.184.216.34", "public.example", "/page")]


async def test_an_ipv6_public_name_is_pinned_too(net):
    result = await _call(_read_url(net), url="http://news.example/")
    assert result.success, result.error
    assert net.seen == [("2606:2800:220:1:248:1893:25c8:1946", "news.example", "/")]


async def test_a_relative_redirect_is_checked_and_followed(net):
    result = await _call(_read_url(net), url="http://public.example/to-relative")
    assert result.success, result.error
    assert [path for _, _, path in net.seen] == ["/to-relative", "/page"]
    assert result.data["finalUrl"] == "http://public.example/page"


async def test_allowing_a_host_lets_only_that_host_through(net):
    fetcher = PageFetcher(
        resolve=table_resolver,
        transport=net.transport(),
        allowed_hosts=frozenset({"intranet.example"}),
    )
    tool = next(t for t in web_toolbox(fetcher).tools if t.name == "readUrl")
    assert (await _call(tool, url="http://intranet.example/wiki")).success
    refused = await _call(tool, url="http://10.0.0.5/wiki")
    assert refused.error_details.code == "ADDRESS_REFUSED"
