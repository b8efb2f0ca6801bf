"""An item keeps only a web address a page may link and the index may store: absolute
http(s), no whitespace or control characters. Anything else a vendor sends becomes no
address instead of failing the listing or the page transaction that stores it."""

from __future__ import annotations

import pytest

from nyla.models.datasource import Item


@pytest.mark.parametrize(
    "url",
    ["https://drive.test/a/b?x=1#y", "HTTP://intranet.test/doc", "https://x.test/%C3%A4"],
)
def test_a_web_address_is_kept(url: str) -> None:
    assert Item(id="1", title="t", url=url).url == url


@pytest.mark.parametrize(
    "url",
    [
        "https://drive.test/odd\x00name.txt",
        "https://drive.test/a b",
        "https://drive.test/a\nSet-Cookie: x",
        "javascript:alert(1)",
        "data:text/html,<script>",
        "/relative/path",
        "https://" + "a" * 9000,
        "",
        42,
    ],
)
def test_anything_else_is_no_address(url: object) -> None:
    assert Item(id="1", title="t", url=url).url is None
