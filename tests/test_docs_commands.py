"""Every ``nyla`` command line in the README's and docs' code blocks names commands and
options the CLI has, with the arguments they need: each is parsed by nyla's own click tree
(nothing runs). Synopsis lines (``[--json]``, ``a | b``) are read as their shortest form."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from nyla.cli import cli

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
PROGRAM = re.compile(r"(?:^|&&\s*)(?:\.venv/bin/|uv run )?nyla(?=\s)")
SUBSTITUTION = re.compile(r"\"?\$\(([^()]*)\)\"?")


def command_lines(text: str) -> list[str]:
    """The ``nyla …`` commands of a page's code blocks, comments and shell around them cut."""
    found = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line.strip().removeprefix("$ "))
            inner = [m.group(1).strip() for m in SUBSTITUTION.finditer(line)]
            for part in [SUBSTITUTION.sub("X", line), *inner]:
                for match in PROGRAM.finditer(part):
                    rest = re.split(r"\s(?:&&|&|<|>)(?:\s|$)", part[match.end() :])[0]
                    found.append(rest.strip())
    return found


def shortest_form(args: str) -> str:
    """A synopsis line's shortest form: optional ``[...]`` parts dropped, ``a | b`` → ``a``."""
    while True:
        dropped = re.sub(r"\s*\[[^\[\]]*\]", "", args)
        if dropped == args:
            break
        args = dropped
    return args.split(" | ")[0]


def parse_problem(args: list[str]) -> str | None:
    """Why click refuses ``args`` (None when it accepts them); values that name files or
    runs that only exist on the reader's machine are not judged."""
    command: click.Command = cli
    name = "nyla"
    parent = None
    try:
        while True:
            ctx = command.make_context(name, list(args), parent=parent)
            if not isinstance(command, click.Group):
                return None
            rest = [*ctx._protected_args, *ctx.args]
            if not rest:
                return None
            found, sub, args = command.resolve_command(ctx, rest)
            if sub is None:
                return f"no command {found!r}"
            command, parent, name = sub, ctx, found or sub.name or ""
    except click.exceptions.Exit:
        return None
    except click.BadParameter as exc:
        return None if "does not exist" in exc.format_message() else exc.format_message()
    except click.UsageError as exc:
        return exc.format_message()


DOCUMENTED = [
    pytest.param(line, id=f"{page.name}:{line[:50]}")
    for page in PAGES
    for line in command_lines(page.read_text(encoding="utf-8"))
]


@pytest.mark.parametrize("line", DOCUMENTED)
def test_documented_command_parses(line: str) -> None:
    args = shlex.split(shortest_form(line).replace("$", "X"))
    assert parse_problem(args) is None


def test_the_pages_have_commands() -> None:
    assert len(DOCUMENTED) > 100


def test_a_wrong_command_is_refused() -> None:
    assert command_lines("```bash\n.venv/bin/nyla db info --json   # x\n```\n") == [
        "db info --json"
    ]
    assert command_lines('```\nnyla runs follow "$(nyla run "a b" --detach)"\n```') == [
        "runs follow X",
        'run "a b" --detach',
    ]
    assert shortest_form("models list [--operation OP] [--json]") == "models list"
    assert shortest_form("connections list | test ID") == "connections list"
    assert parse_problem(["db", "info"]) is None
    assert "No such command" in (parse_problem(["dbx", "info"]) or "")
    assert "No such option" in (parse_problem(["db", "info", "--jsonn"]) or "")
    assert "Missing argument" in (parse_problem(["knowledge", "show"]) or "")
