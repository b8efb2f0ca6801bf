"""The sandbox: bubblewrap (Debian's ``bubblewrap``) around a Python process.

New user, pid, network, IPC, UTS and cgroup namespaces (no network at all: only a loopback that
nothing listens on), the Python runtime and the shared libraries bound read-only and nothing
else of the host (no /etc, no home, no data directory), a size-limited tmpfs as the working
directory (thrown away when the process ends), a read-only root, a fixed environment of five
variables, ``--die-with-parent`` and ``--new-session``. Around it: resource limits (CPU
seconds, address space, processes, file size, open files) set before ``bwrap`` starts, a
wall-clock timeout that kills the whole process group, and caps on what is read back. Run as
root, the sandbox drops to ``nobody`` first, so the process limit counts only sandboxes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from nyla_toolbox_code.seccomp import compiled_filter

#: where the sandbox runs as when nyla runs as root (``nobody``)
UNPRIVILEGED_UID = 65534
RUNNER = Path(__file__).with_name("runner.py")
ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/work",
    "LANG": "C.UTF-8",
    "PYTHONIOENCODING": "utf-8",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class SandboxUnavailableError(RuntimeError):
    """No sandbox can be set up on this machine; the message says why."""


@dataclass(frozen=True)
class Limits:
    """What one run may use."""

    cpu_seconds: int = 10
    memory_bytes: int = 1 << 30
    processes: int = 32
    file_bytes: int = 16 << 20
    open_files: int = 64
    disk_bytes: int = 64 << 20
    wall_seconds: float = 30.0
    output_bytes: int = 32 << 10
    out_files: int = 20
    out_bytes: int = 16 << 20


@dataclass
class Stream:
    """One output stream as read back: its first bytes and how many there were."""

    head: bytes = b""
    total: int = 0

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head)


@dataclass
class SandboxResult:
    """What a run left: exit code, output, the files of /work/out, and whether it was killed."""

    exit_code: int | None
    stdout: Stream
    stderr: Stream
    timed_out: bool
    wall_seconds: float
    files: list[tuple[str, bytes]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Runtime:
    """The interpreter the sandbox runs and what it needs mounted."""

    python: str
    prefix: str


def runtime() -> Runtime:
    """The interpreter nyla runs on (its base installation, never a virtualenv's packages)."""
    python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    return Runtime(python=python, prefix=os.path.realpath(sys.base_prefix))


def bwrap_args(
    rt: Runtime, job: Path, limits: Limits, results_fd: int, seccomp_fd: int | None
) -> list[str]:
    """The ``bwrap`` command line of one run."""
    args = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
    ]
    args += ["--clearenv"] if seccomp_fd is None else ["--clearenv", "--seccomp", str(seccomp_fd)]
    for key, value in ENV.items():
        args += ["--setenv", key, value]
    args += ["--ro-bind", rt.prefix, rt.prefix]
    for lib in ("/usr/lib", "/usr/lib64"):
        if os.path.isdir(lib) and not rt.prefix.startswith(lib + "/"):
            args += ["--ro-bind", lib, lib]
    for top in ("/lib", "/lib64"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(limits.disk_bytes), "--tmpfs", "/work", "--dir", "/work/out"]
    args += ["--ro-bind", str(job / "in"), "/work/in"]
    args += ["--ro-bind", str(job / "main.py"), "/code/main.py"]
    args += ["--ro-bind", str(RUNNER), "/code/runner.py"]
    args += ["--remount-ro", "/", "--chdir", "/work"]
    args += [rt.python, "-I", "-B", "/code/runner.py"]
    return [*args, str(results_fd), str(limits.out_files), str(limits.out_bytes)]


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


def _preexec(limits: Limits, as_uid: int | None, nproc: int) -> None:
    """In the child before ``bwrap`` starts: drop root, set the limits (inherited by all)."""
    if as_uid is not None:
        os.setgroups([])
        os.setgid(as_uid)
        os.setuid(as_uid)
    # SIGXCPU at the soft limit (the program ends with it), SIGKILL a second later
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    for which, value in (
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(which, (value, value))


async def _read_capped(reader: asyncio.StreamReader | None, cap: int) -> Stream:
    """Read to the end, keeping the first ``cap`` bytes (the rest is counted, not kept)."""
    stream = Stream()
    if reader is None:
        return stream
    while chunk := await reader.read(65536):
        if len(stream.head) < cap:
            stream.head += chunk[: cap - len(stream.head)]
        stream.total += len(chunk)
    return stream


def _prepare(job: Path, code: str, inputs: dict[str, bytes], as_uid: int | None) -> None:
    (job / "in").mkdir()
    (job / "main.py").write_text(code, encoding="utf-8")
    for name, content in inputs.items():
        (job / "in" / name).write_bytes(content)
    if as_uid is not None:
        for path in (job, job / "in", job / "main.py", *(job / "in").iterdir()):
            os.chown(path, 0, as_uid)
            path.chmod(0o750 if path.is_dir() else 0o640)


def _read_results(raw: bytes, result: SandboxResult) -> None:
    for line in raw.splitlines():
        try:
            item = json.loads(line)
            name = str(item["name"])
            if item.get("dropped"):
                result.dropped.append(name)
            else:
                result.files.append((name, base64.b64decode(item["data"], validate=True)))
        except (ValueError, KeyError, TypeError):
            result.dropped.append("(unreadable entry)")


async def run_python(code: str, inputs: dict[str, bytes], limits: Limits) -> SandboxResult:
    """Run ``code`` in a fresh sandbox with ``inputs`` in /work/in (read-only)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailableError("bwrap is not on PATH")
    as_uid = UNPRIVILEGED_UID if os.geteuid() == 0 else None
    uid = os.geteuid() if as_uid is None else as_uid
    nproc = _processes_of(uid) + limits.processes
    with tempfile.TemporaryDirectory(prefix="nyla-sandbox-") as tmp:
        job = Path(tmp)
        _prepare(job, code, inputs, as_uid)
        read_end, write_end = os.pipe()
        seccomp_fd = _filter_pipe()
        passed = (write_end,) if seccomp_fd is None else (write_end, seccomp_fd)
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                bwrap,
                *bwrap_args(runtime(), job, limits, write_end, seccomp_fd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(ENV),
                pass_fds=passed,
                start_new_session=True,
                preexec_fn=functools.partial(_preexec, limits, as_uid, nproc),
            )
        finally:
            for fd in passed:
                os.close(fd)
        return await _collect(proc, read_end, limits, started)


def _filter_pipe() -> int | None:
    """A pipe holding the seccomp filter for ``bwrap --seccomp`` (its read end), if any."""
    bpf = compiled_filter()
    if bpf is None:
        return None
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, bpf)  # a few hundred bytes: fits the pipe's buffer
    finally:
        os.close(write_end)
    return read_end


async def _collect(
    proc: asyncio.subprocess.Process, read_end: int, limits: Limits, started: float
) -> SandboxResult:
    loop = asyncio.get_running_loop()
    results = asyncio.StreamReader(limit=1 << 20)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(results), os.fdopen(read_end, "rb", buffering=0)
    )
    reading = asyncio.gather(
        _read_capped(proc.stdout, limits.output_bytes),
        _read_capped(proc.stderr, limits.output_bytes),
        _read_capped(results, limits.out_bytes * 2 + 65536),
        proc.wait(),
    )
    timed_out = False
    try:
        out, err, raw, code = await asyncio.wait_for(asyncio.shield(reading), limits.wall_seconds)
    except TimeoutError:
        timed_out = True
        _kill_group(proc.pid)
        out, err, raw, code = await asyncio.wait_for(reading, 10)
    except BaseException:  # the call was cancelled (the tool's timeout, a stopped run)
        _kill_group(proc.pid)
        reading.cancel()
        raise
    finally:
        transport.close()
    result = SandboxResult(
        exit_code=code,
        stdout=out,
        stderr=err,
        timed_out=timed_out,
        wall_seconds=time.monotonic() - started,
    )
    if not raw.truncated:
        _read_results(raw.head, result)
    return result


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


@functools.cache
def _probe(bwrap: str, python: str) -> str | None:
    probe = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
    ]
    probe += ["--clearenv"]
    probe += ["--ro-bind", "/", "/", "--proc", "/proc", "--size", "65536", "--tmpfs", "/work"]
    probe += [python, "-I", "-c", "pass"]
    as_uid = UNPRIVILEGED_UID if os.geteuid() == 0 else None
    nproc = _processes_of(os.geteuid() if as_uid is None else as_uid) + 32
    preexec = functools.partial(_preexec, Limits(), as_uid, nproc)
    try:
        done = subprocess.run(
            probe, capture_output=True, timeout=20, env=dict(ENV), preexec_fn=preexec
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not start: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
        return f"bwrap cannot set up a sandbox here (user namespaces refused?): {said}"
    return None


def unavailable_reason() -> str | None:
    """Why no sandbox can be set up here, or ``None`` when one can (checked once per
    ``bwrap`` location: a trial run of the interpreter in the namespaces the tool uses)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return (
            "bwrap (Debian package bubblewrap) is not on PATH: executeCode needs it to isolate "
            "the code it runs"
        )
    return _probe(bwrap, runtime().python)
