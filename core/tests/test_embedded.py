"""The embedded server on any machine: the AVX-512 guard, ownership and restart of a stale
server, the major-version refusal, and the canary's failure path (real servers, no mocks)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from nyla.dbcanary import CANARY_STEPS, run_canary
from nyla.embedded import (
    _system_user,
    installation,
    read_owner,
    start_embedded,
    stop_embedded,
)
from nyla.errors import DatabaseUnavailableError

NYLA = [sys.executable, "-m", "nyla.cli"]
LEGACY_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x67}


def evex_outside_dispatch(disassembly: str) -> dict[str, int]:
    """Functions (not named ``*Avx512*``) holding EVEX-encoded instructions, with counts.

    In 64-bit code the byte 0x62 after the legacy prefixes can only start an EVEX prefix
    (BOUND does not exist there), so it marks an AVX-512 instruction exactly."""
    found: dict[str, int] = {}
    function = "?"
    for line in disassembly.splitlines():
        header = re.match(r"^(?:[0-9a-f]+ )?<(.+)>:$", line)
        if header:
            function = header.group(1)
            continue
        parts = line.split("\t")
        if len(parts) < 3 or not parts[2].strip():
            continue  # not an instruction, or the continuation of a long one
        raw = [int(b, 16) for b in parts[1].split()]
        while raw and raw[0] in LEGACY_PREFIXES:
            raw.pop(0)
        if raw and raw[0] == 0x62 and "avx512" not in function.lower():
            found[function] = found.get(function, 0) + 1
    return found


def test_evex_scanner_finds_avx512_and_ignores_the_rest() -> None:
    sample = (
        "<hnswcostestimate>:\n"
        "\t62 f1 ff 08 7b c0    \tvcvtusi2sd %rax,%xmm0,%xmm0\n"
        "\tc5 fb 10 05 00 00 00 00\tvmovsd 0x0(%rip),%xmm0\n"
        "<VectorL2SquaredDistanceAvx512Popcount>:\n"
        "\t62 f1 7c 48 28 c1    \tvmovaps %zmm1,%zmm0\n"
        "<other>:\n"
        "\t67 62 f1 7c 48 28 00 \tvmovaps (%eax),%zmm0\n"
        "\t48 83 ec 08          \tsub    $0x8,%rsp\n"
    )
    assert evex_outside_dispatch(sample) == {"hnswcostestimate": 1, "other": 1}


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86_64 only")
@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_installed_pgvector_has_no_avx512_outside_runtime_dispatch() -> None:
    library = installation().vector_library
    out = subprocess.run(
        ["objdump", "-d", "--no-addresses", str(library)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "<" in out, f"objdump printed no functions for {library}"
    offenders = evex_outside_dispatch(out)
    assert not offenders, (
        f"{library} uses AVX-512 (EVEX) outside runtime-dispatched functions, so it crashes on "
        f"CPUs without AVX-512: {sorted(offenders.items())[:10]}"
    )


def _nyla(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NYLA_DATABASE_URL"}
    env["NYLA_HOME"] = str(home)
    env.pop("XDG_RUNTIME_DIR", None)  # as on a headless machine
    result = subprocess.run([*NYLA, *args], capture_output=True, text=True, env=env, timeout=180)
    if check:
        assert result.returncode == 0, result.stderr
    assert "XDG_RUNTIME_DIR" not in result.stderr
    return result


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _running(pgdata: Path) -> bool:
    import psutil

    return any(
        p.info["cmdline"] and str(pgdata) in " ".join(p.info["cmdline"])
        for p in psutil.process_iter(attrs=["name", "cmdline"])
        if p.info["name"] == "postgres"
    )


@pytest.fixture
def home() -> Path:
    base = Path(tempfile.mkdtemp(prefix="nyla-h-"))
    try:
        yield base
    finally:
        stop_embedded(base)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(platform.system() == "Windows", reason="pg_ctl by hand is POSIX here")
def test_a_server_from_a_deleted_installation_is_restarted_from_this_one(home: Path) -> None:
    import psycopg

    url = json.loads(_nyla(home, "db", "info", "--json").stdout)["url"]
    with psycopg.connect(_libpq(url), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (v text)")
        conn.execute("INSERT INTO kept VALUES ('written before')")
    _nyla(home, "db", "stop")

    # Start the same data directory from a throwaway copy of the installation, then delete it.
    copy = Path(tempfile.mkdtemp(prefix="nyla-inst-"))
    shutil.copytree(installation().bin_dir.parent, copy / "pginstall", symlinks=True)
    os.chmod(copy, 0o755)
    pgdata = home / "pgdata"
    subprocess.run(
        [
            str(copy / "pginstall/bin/pg_ctl"),
            "-D",
            str(pgdata),
            "-w",
            "-o",
            '-h ""',
            "-o",
            f"-k {pgdata}",
            "-l",
            str(pgdata / "log"),
            "start",
        ],
        check=True,
        capture_output=True,
        user=_system_user(),
        timeout=60,
    )
    shutil.rmtree(copy)

    info = json.loads(_nyla(home, "db", "info", "--json").stdout)
    assert info["ownedByThisInstallation"] is True
    assert info["canary"] == "ok"
    owner = read_owner(home)
    assert owner is not None
    assert owner["binary"] == str(installation().binary)
    assert owner["restartedBecause"] == "its binary no longer exists"
    with psycopg.connect(_libpq(info["url"])) as conn:
        assert conn.execute("SELECT v FROM kept").fetchall() == [("written before",)]


def test_a_data_directory_of_another_major_is_refused_untouched(home: Path) -> None:
    pgdata = home / "pgdata"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("16\n")
    result = _nyla(home, "db", "info", check=False)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "PostgreSQL 16" in lines[0] and f"PostgreSQL {installation().pg_version}" in lines[0]
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in pgdata.iterdir()) == ["PG_VERSION"]
    assert (pgdata / "PG_VERSION").read_text() == "16\n"


def _kill_own_backend(cur: object) -> None:
    cur.execute("SELECT pg_terminate_backend(pg_backend_pid())")  # type: ignore[attr-defined]


def test_the_canary_reports_a_dying_backend_in_one_line(embedded_pg: str) -> None:
    with pytest.raises(DatabaseUnavailableError) as err:
        run_canary(_libpq(embedded_pg), steps=[("a backend that dies", _kill_own_backend)])
    message = str(err.value)
    assert "\n" not in message
    assert "crashed during the self-check (a backend that dies)" in message
    assert "NYLA_DATABASE_URL" in message
    run_canary(_libpq(embedded_pg))  # the real steps pass on this machine


def test_a_failing_canary_leaves_no_server_running(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "nyla.dbcanary.CANARY_STEPS", [*CANARY_STEPS, ("a backend that dies", _kill_own_backend)]
    )
    with pytest.raises(DatabaseUnavailableError, match="crashed"):
        start_embedded(home)
    assert not _running(home / "pgdata")
    assert read_owner(home) is None
