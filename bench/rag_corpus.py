"""Build the RAG benchmark's text corpus from text already on disk: the docstrings of the
Python sources of the standard library and the installed packages (real English technical
prose). Passages are docstring paragraphs of 8-80 words, deduplicated, in a deterministic
shuffled order. Standard library only, so any interpreter can run it.

    python bench/rag_corpus.py --n 100000 --queries 200 --out bench/.cache/corpus-100000.jsonl
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import re
import sys
import sysconfig
from pathlib import Path


def roots(extra: list[str]) -> list[Path]:
    """Directories whose .py files are read (stdlib, site-packages of this interpreter)."""
    paths = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], *extra}
    return sorted(Path(p) for p in paths if Path(p).is_dir())


def passages_of(source: str) -> list[str]:
    """Docstring paragraphs of one module."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if not doc:
                continue
            for para in re.split(r"\n\s*\n", doc):
                if re.search(r"^\s*(>>>|\.\.|:param|:return|Args:|Returns:)", para, re.M):
                    continue
                text = " ".join(para.replace("\x00", "").split())
                words = text.split()
                if 8 <= len(words) <= 80 and sum(c.isalpha() for c in text) > 0.6 * len(text):
                    out.append(text)
    return out


def source_files(extra: list[str], seed: int) -> list[Path]:
    """Every non-test .py file under the roots, in a deterministic shuffled order."""
    files = [
        path
        for root in roots(extra)
        for path in root.rglob("*.py")
        if "test" not in path.parts[-1] and "/tests/" not in str(path) and "/test/" not in str(path)
    ]
    files.sort(key=lambda p: hashlib.md5(f"{seed}:{p}".encode()).hexdigest())
    return files


def build(n: int, queries: int, extra: list[str], seed: int = 42) -> list[str]:
    """``queries + n`` distinct passages (queries first), deterministic for a seed.

    Files are read in a seeded random order until there are enough passages: parsing every
    module of a large environment (torch alone has thousands) took longer than embedding,
    so a 10k corpus reads a sample of the files, not all of them."""
    need = n + queries
    seen: set[str] = set()
    passages: list[str] = []
    for path in source_files(extra, seed):
        if len(passages) >= need:
            break
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for text in passages_of(source):
            key = hashlib.md5(text.lower().encode()).hexdigest()
            if key not in seen:
                seen.add(key)
                passages.append(text)
    random.Random(seed).shuffle(passages)
    if len(passages) < need:
        sys.exit(f"only {len(passages)} distinct passages on disk, {need} needed")
    return passages[:need]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--root", action="append", default=[], help="extra source directory")
    args = parser.parse_args()
    passages = build(args.n, args.queries, args.root)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(passages):
            kind = "query" if i < args.queries else "doc"
            fh.write(json.dumps({"kind": kind, "text": text}, ensure_ascii=False) + "\n")
    print(f"{len(passages)} passages -> {args.out}")


if __name__ == "__main__":
    main()
