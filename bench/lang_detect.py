"""Accuracy of nyla's language detector (nyla.knowledge.language) on short pieces of real
text in German, English, French and Italian.

The texts are Debian's own translations, fetched with the ordinary package client (nothing
of them is stored in this repository):

    mkdir -p /tmp/langdata && cd /tmp/langdata
    apt-get download debian-reference-{en,de,fr,it} manpages-{de,fr,it}
    for f in *.deb; do dpkg-deb -x "$f" x; done
    .venv/bin/python bench/lang_detect.py /tmp/langdata/x

Paragraphs of prose (mostly letters, at least 12 words) are cut into pieces of 5, 10, 20 and
50 words; a paragraph of a translation that also appears in the English original (left
untranslated) is skipped, and so is one with "the" twice or more (the manual pages leave many
paragraphs of their translations in English: label noise, not a detector error). For each language and length the report gives the share detected
correctly, wrongly, and left unknown (searched with the ``simple`` configuration).
"""

from __future__ import annotations

import gzip
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

from nyla.knowledge.language import detect

LENGTHS = (5, 10, 20, 50)
PER_CELL = 400


def _paragraphs(text: str) -> list[str]:
    out = []
    for block in re.split(r"\n\s*\n", text):
        para = " ".join(block.split())
        words = para.split()
        letters = sum(ch.isalpha() for ch in para)
        if len(words) >= 12 and letters > 0.75 * len(para.replace(" ", "")):
            out.append(para)
    return out


def _roff(path: Path) -> str:
    raw = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    lines = []
    for line in raw.splitlines():
        if line.startswith((".", "'")):
            lines.append("" if line[:3] in (".PP", ".SH", ".TP", ".IP") else line[4:])
        else:
            lines.append(re.sub(r"\\f[BIRP]|\\-|\\\(..|\\&|\\e", " ", line))
    return "\n".join(lines)


def _translated(paragraph: str, english: set[str]) -> bool:
    """False for a paragraph a translation left in English."""
    if paragraph in english:
        return False
    return len(re.findall(r"\bthe\b", paragraph, flags=re.IGNORECASE)) < 2


def corpus(root: Path) -> dict[str, dict[str, list[str]]]:
    """{source: {language: paragraphs}}."""
    reference: dict[str, list[str]] = {}
    for lang in ("en", "de", "fr", "it"):
        files = list(root.rglob(f"debian-reference.{lang}.txt.gz"))
        text = gzip.decompress(files[0].read_bytes()).decode("utf-8") if files else ""
        reference[lang] = _paragraphs(text)
    english = set(reference["en"])
    for lang in ("de", "fr", "it"):
        reference[lang] = [p for p in reference[lang] if _translated(p, english)]
    manpages: dict[str, list[str]] = {}
    for lang in ("de", "fr", "it"):
        paths = sorted(root.rglob(f"usr/share/man/{lang}/man*/*.gz"))
        found = [p for path in paths for p in _paragraphs(_roff(path))]
        manpages[lang] = [p for p in found if _translated(p, english)]
    return {"debian-reference": reference, "manpages": manpages}


def pieces(paragraphs: list[str], words: int, rng: random.Random) -> list[str]:
    """Up to PER_CELL pieces of ``words`` words, each from a random paragraph."""
    usable = [p.split() for p in paragraphs if len(p.split()) >= words]
    rng.shuffle(usable)
    out = []
    for tokens in usable[:PER_CELL]:
        start = rng.randrange(0, len(tokens) - words + 1)
        out.append(" ".join(tokens[start : start + words]))
    return out


def main(root: Path) -> None:
    rng = random.Random(30)
    print("| source | language | words | pieces | correct | wrong | unknown |")
    print("|---|---|---:|---:|---:|---:|---:|")
    totals: Counter[str] = Counter()
    spent, count = 0.0, 0
    for source, by_lang in corpus(root).items():
        for lang, paragraphs in by_lang.items():
            for words in LENGTHS:
                sample = pieces(paragraphs, words, rng)
                if not sample:
                    continue
                started = time.perf_counter()
                found = Counter(detect(p) for p in sample)
                spent += time.perf_counter() - started
                count += len(sample)
                right, unknown = found[lang], found[""]
                wrong = len(sample) - right - unknown
                totals.update({f"{words}:right": right, f"{words}:all": len(sample)})
                totals.update({f"{words}:wrong": wrong})
                print(
                    f"| {source} | {lang} | {words} | {len(sample)} | "
                    f"{right / len(sample):.1%} | {wrong / len(sample):.1%} | "
                    f"{unknown / len(sample):.1%} |"
                )
    for words in LENGTHS:
        n = totals[f"{words}:all"] or 1
        print(
            f"all, {words} words: {totals[f'{words}:right'] / n:.1%} correct, "
            f"{totals[f'{words}:wrong'] / n:.1%} wrong"
        )
    print(f"{spent / max(count, 1) * 1e6:.0f} µs per piece")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/langdata/x"))
