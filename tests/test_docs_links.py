"""Every relative link in the README and docs/ points at a file that exists and, with an
anchor, at a heading that file has (GitHub's rules for heading anchors)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^)\s#]*)(#[^)\s]*)?\)")


def prose(text: str) -> str:
    """The page without code blocks and code spans (links in code are examples)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings, ``-1``, ``-2`` … for repeats."""
    seen: Counter[str] = Counter()
    out = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if not line.startswith("#"):
            continue
        base = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        out.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return out


def broken_links(page: Path) -> list[str]:
    bad = []
    for match in LINK.finditer(prose(page.read_text(encoding="utf-8"))):
        target, anchor = match.group(1), match.group(2)
        if re.match(r"[a-z]+:", target):
            continue
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            bad.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor[1:] not in anchors(path):
            bad.append(f"{target}{anchor}: no such heading")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_the_checker_sees_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A heading\n## Twice\n## Twice\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-heading) [ok](other.md#twice-1) `[code](gone.md)`\n"
        "[gone](gone.md) [bad](other.md#nothing) [self](#nowhere)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "gone.md: no such file",
        "other.md#nothing: no such heading",
        "#nowhere: no such heading",
    ]
