"""Hostile code in the sandbox: each attempt is refused or bounded. The code prints what it
got, so each test checks the sandbox's answer, not only that the run ended."""

from __future__ import annotations

import asyncio
import os
import socket

import psutil
import pytest

from nyla_toolbox_code.sandbox import Limits, run_python
from nyla_toolbox_code.seccomp import compiled_filter

from .conftest import needs_bwrap

pytestmark = needs_bwrap

READ = """
import sys
for path in sys.argv[1:] or {paths!r}:
    try:
        with open(path, "rb") as f:
            print("READ", path, len(f.read()))
    except OSError as exc:
        print("REFUSED", path, type(exc).__name__)
"""


async def run(code: str, **limits: object) -> tuple[str, object]:
    result = await run_python(code, {}, Limits(**limits))  # type: ignore[arg-type]
    return result.stdout.head.decode(), result


async def test_host_files_are_not_there(db):
    from sqlalchemy import text

    async with db.session() as session:
        data_dir = (await session.execute(text("SHOW data_directory"))).scalar_one()
    paths = ["/etc/passwd", "/etc/shadow", f"{data_dir}/PG_VERSION", f"{data_dir}/global/pg_control",
             os.path.expanduser("~/.ssh/id_rsa"), "/proc/1/environ"]  # fmt: skip
    out, result = await run(READ.format(paths=paths))
    assert result.exit_code == 0
    for path in paths[:-1]:
        assert f"REFUSED {path} FileNotFoundError" in out
    assert os.path.exists(f"{data_dir}/PG_VERSION")  # it is there, outside


async def test_no_network_not_even_the_hosts_loopback():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    code = f"""
import errno, socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("CONNECTED")
except OSError as exc:
    print("TCP", errno.errorcode[exc.errno])
try:
    socket.getaddrinfo("example.com", 443)
    print("RESOLVED")
except OSError as exc:
    print("DNS", type(exc).__name__)
"""
    try:
        out, _ = await run(code)
    finally:
        server.close()
    # refused by the seccomp filter where there is one, else by the empty network namespace
    expected = "EAFNOSUPPORT" if compiled_filter() else "ECONNREFUSED"
    assert f"TCP {expected}" in out and "CONNECTED" not in out
    assert "DNS gaierror" in out and "RESOLVED" not in out


async def test_a_fork_bomb_hits_the_process_limit():
    code = """
import os, time
made = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        made += 1
except OSError as exc:
    print("FORKS", made, type(exc).__name__)
"""
    out, result = await run(code, processes=16, wall_seconds=20)
    assert not result.timed_out  # the sleeping children died with the sandbox's pid namespace
    made = int(out.split()[1])
    assert 0 < made < 16 and "BlockingIOError" in out


async def test_filling_the_disk_stops_at_the_file_and_tmpfs_limits():
    code = """
import os
chunk = b"x" * (1 << 20)
written = 0
try:
    with open("one", "wb") as f:
        while True:
            f.write(chunk); f.flush(); written += 1
except OSError as exc:
    print("FILE", written, exc.errno)
written = 0
try:
    for n in range(1000):
        with open(f"part{n}", "wb") as f:
            for _ in range(4):
                f.write(chunk); f.flush(); written += 1
except OSError as exc:
    print("DISK", written, exc.errno)
"""
    out, _ = await run(code, file_bytes=8 << 20, disk_bytes=32 << 20)
    file_line, disk_line = out.splitlines()
    assert file_line.split()[0] == "FILE" and int(file_line.split()[1]) <= 8
    assert file_line.split()[2] == "27"  # EFBIG: the file-size limit
    assert disk_line.split()[0] == "DISK" and int(disk_line.split()[1]) <= 32
    assert disk_line.split()[2] == "28"  # ENOSPC: the working directory is full


async def test_nothing_outside_the_working_directory_is_writable():
    code = """
import os
for path in ["/x", "/tmp/x", "/usr/lib/x", "/code/main.py", "/work/in/x", "/root/x",
             os.path.realpath(os.__file__)]:
    try:
        with open(path, "a") as f:
            f.write("x")
        print("WROTE", path)
    except OSError as exc:
        print("REFUSED", path, exc.errno)
"""
    out, _ = await run(code)
    assert "WROTE" not in out and out.count("REFUSED") == 7


async def test_the_parents_secrets_are_not_in_the_environment(monkeypatch):
    monkeypatch.setenv("NYLA_TEST_SECRET", "hunter2-secret")
    code = """
import os
print(sorted(os.environ))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            print(open(f"/proc/{pid}/environ", "rb").read())
        except OSError:
            pass
"""
    out, result = await run(code)
    assert result.exit_code == 0
    assert "hunter2" not in out and "NYLA_TEST_SECRET" not in out
    assert out.splitlines()[0] == str(
        ["HOME", "LANG", "PATH", "PWD", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING"]
    )


async def test_a_busy_loop_is_stopped_by_the_cpu_limit():
    _, result = await run("while True: pass", cpu_seconds=2, wall_seconds=60)
    assert not result.timed_out and result.exit_code == 128 + 24  # SIGXCPU


async def test_sleeping_forever_is_killed_at_the_wall_clock_limit():
    code = "import os, time\nos.fork()\ntime.sleep(10**6)"
    _, result = await run(code, wall_seconds=2)
    assert result.timed_out and result.exit_code == -9


async def test_memory_is_bounded():
    code = "try:\n    b = bytearray(2 << 30)\nexcept MemoryError:\n    print('MEMORY refused')"
    out, _ = await run(code, memory_bytes=512 << 20)
    assert out.strip() == "MEMORY refused"


async def test_a_huge_output_is_cut_and_counted():
    code = "import sys\nfor _ in range(200):\n    sys.stdout.write('x' * 100_000)"
    _, result = await run(code, output_bytes=4096)
    assert len(result.stdout.head) == 4096 and result.stdout.total == 20_000_000
    assert result.stdout.truncated and result.exit_code == 0


@pytest.mark.skipif(compiled_filter() is None, reason="no libseccomp (python3-seccomp)")
async def test_the_seccomp_filter_refuses_tracing_keyrings_and_inet_sockets():
    code = """
import ctypes, errno, os, platform, socket
libc = ctypes.CDLL(None, use_errno=True)
KEYCTL = {"x86_64": 250, "aarch64": 219}[platform.machine()]
for name, call in [("ptrace", lambda: libc.ptrace(16, 1, 0, 0)),   # PTRACE_ATTACH to pid 1
                   ("keyctl", lambda: libc.syscall(KEYCTL, 0, 0, 0, 0)),
                   ("unshare", lambda: libc.unshare(0x10000000))]:  # CLONE_NEWUSER
    got = call()
    print(name, got, errno.errorcode.get(ctypes.get_errno()))
for family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_UNIX):
    try:
        socket.socket(family, socket.SOCK_DGRAM).close()
        print(family.name, "opened")
    except OSError as exc:
        print(family.name, errno.errorcode[exc.errno])
"""
    out, _ = await run(code)
    assert out.splitlines() == [
        "ptrace -1 EPERM", "keyctl -1 EPERM", "unshare -1 EPERM", "AF_INET EAFNOSUPPORT",
        "AF_INET6 EAFNOSUPPORT", "AF_NETLINK EAFNOSUPPORT", "AF_UNIX opened",
    ]  # fmt: skip


async def test_a_cancelled_call_kills_its_sandbox():
    code = "import time\nprint('up', flush=True)\ntime.sleep(10**6)"
    task = asyncio.ensure_future(run(code, wall_seconds=120))
    # this test's own sandbox (another test's, in another worker, may run at the same time)
    ours: list[psutil.Process] = []
    for _ in range(600):
        ours = [
            p
            for p in psutil.Process().children(recursive=True)
            if "/code/runner.py" in " ".join(_cmdline(p))
        ]
        if ours:
            break
        await asyncio.sleep(0.05)
    assert ours, "the sandbox did not start"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _gone, alive = await asyncio.to_thread(psutil.wait_procs, ours, 30)
    assert not alive, alive


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []
