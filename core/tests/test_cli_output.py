"""What people and programs read from the CLI: valid JSON whatever the data, ids in one piece,
literal text where rich would see markup, and the build settings that keep it fast."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
from click.testing import CliRunner

from nyla.commands.output import emit_json, json_line, table

REPO = Path(__file__).resolve().parents[2]


def test_json_output_is_valid_for_nan_infinity_and_lone_surrogates():
    text = json_line({"d": math.nan, "e": [math.inf, -math.inf, 1.5], "t": "a\ud800b"})
    data = json.loads(text)
    assert data == {"d": None, "e": [None, None, 1.5], "t": "a\ud800b"}
    text.encode("utf-8")  # encodable: no lone surrogate left


def _printed(fn) -> str:
    @click.command()
    def command() -> None:
        fn()

    result = CliRunner().invoke(command, [], terminal_width=60)
    assert result.exit_code == 0, result.output
    return result.output


def test_emit_json_prints_null_not_nan():
    out = _printed(lambda: emit_json([{"distance": math.nan}]))
    assert json.loads(out) == [{"distance": None}]


def test_ids_are_never_wrapped_and_markup_is_literal():
    run_id = "375e9447c73f4dc7ab74485c5bf36764"
    out = _printed(
        lambda: table(
            "runs",
            ["run id", "prompt", "available"],
            [(run_id, "a long prompt " * 6, "no: pip install 'nyla-provider-local[minilm]'")],
        )
    )
    assert run_id in out
    assert "[minilm]" in out
    assert "\\[minilm]" not in out


def test_the_environment_make_builds_has_bytecode():
    makefile = (REPO / "Makefile").read_text()
    assert "export UV_COMPILE_BYTECODE := 1" in makefile


def test_an_argument_that_is_not_utf8_is_one_line_and_exit_2(tmp_path):
    """Bytes that are not UTF-8 reach Python as lone surrogates; every command refuses them
    before touching the database (they were a 120-line UnicodeEncodeError traceback)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NYLA_HOME": str(tmp_path)}
    for args in ([b"runs", b"show", b"\xff\xfe"], [b"tokens", b"revoke", b"x\xc3"]):
        done = subprocess.run(
            [sys.executable, "-c", "from nyla.cli import main; main()", *args],
            capture_output=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.decode("utf-8").strip().splitlines()
        assert len(lines) == 1 and "not valid UTF-8" in lines[0], lines
