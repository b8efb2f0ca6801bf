"""Where the key that encrypts stored tokens comes from.

The first of these that is set wins:

1. ``NYLA_SECRET_KEY`` (environment or config file): the key itself — one or more Fernet
   keys separated by commas; the first encrypts, all decrypt (rotation).
2. ``NYLA_SECRET_KEY_FILE``: the path of a file holding the key(s) the same way (commas or
   line breaks between them) — a Docker or Kubernetes secret such as
   ``/run/secrets/nyla_secret_key``. A file that is missing or unreadable is an error, never
   a reason to make a new key.
3. The key file beside nyla's configuration, ``<config dir>/secret.key`` (the directory of
   ``$NYLA_CONFIG``, else ``~/.config/nyla`` on Linux), created on first use with mode 0600.
   It is deliberately not in the data directory: a copy of the database (a backup, a volume
   snapshot) must not carry the key that decrypts its tokens.

An older nyla kept the key file in the data directory, beside the database. When no key is
configured and that file exists, it is moved to the configuration directory (written
there, read back, then removed); if it cannot be moved it stays in use where it is, and if
the configuration directory already holds a different key, both are used (the new one
encrypts, the old one still decrypts), so no stored token ever becomes unreadable.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nyla.config import config_path, config_value
from nyla.errors import ConfigurationError

KEY_SETTING = "NYLA_SECRET_KEY"
KEY_FILE_SETTING = "NYLA_SECRET_KEY_FILE"
KEY_FILE_NAME = "secret.key"
MAKE_ONE = (
    "make one with `python -c 'from cryptography.fernet import Fernet; "
    "print(Fernet.generate_key().decode())'`"
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeySource:
    """The keys in use (the first encrypts) and where they came from, for messages."""

    keys: list[bytes]
    origin: str


def default_key_file() -> Path:
    """Where nyla keeps its own key when none is configured: beside the config file."""
    return config_path().parent / KEY_FILE_NAME


def legacy_key_file(data_dir: Path | None = None) -> Path:
    """Where an older nyla kept its key: in the data directory, beside the database."""
    from nyla.embedded import default_data_dir

    return (data_dir or default_data_dir()) / KEY_FILE_NAME


def parse_keys(text: str, origin: str) -> list[bytes]:
    """The Fernet keys in ``text`` (commas or whitespace between them); a clear error that
    names ``origin`` (never the key) when one is not a key."""
    from cryptography.fernet import Fernet  # with the keys, not with the connections

    parts = [p for p in re.split(r"[\s,]+", text) if p]
    if not parts:
        raise ConfigurationError(f"{origin} holds no encryption key; {MAKE_ONE}")
    for number, part in enumerate(parts, 1):
        try:
            Fernet(part.encode("ascii"))
        except (ValueError, TypeError, UnicodeEncodeError):
            which = f"key {number} of {origin}" if len(parts) > 1 else origin
            raise ConfigurationError(
                f"{which} is not a valid Fernet key (32 url-safe base64 bytes, 44 characters); "
                + MAKE_ONE
            ) from None
    return [p.encode("ascii") for p in parts]


def load_keys(data_dir: Path | None = None) -> KeySource:
    """The configured keys: ``NYLA_SECRET_KEY``, else ``NYLA_SECRET_KEY_FILE``, else the
    key file in the configuration directory (an older one moved there from the data
    directory ``data_dir``, or a new one made)."""
    configured = config_value(KEY_SETTING)
    named_file = config_value(KEY_FILE_SETTING)
    if configured:
        if named_file:
            log.warning("%s is set, so %s is ignored", KEY_SETTING, KEY_FILE_SETTING)
        return KeySource(parse_keys(configured, KEY_SETTING), KEY_SETTING)
    if named_file:
        path = Path(named_file).expanduser()
        origin = f"{KEY_FILE_SETTING} ({path})"
        return KeySource(parse_keys(_read(path, origin), origin), origin)
    return _own_key_files(data_dir)


def _read(path: Path, origin: str) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"{origin} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{origin} cannot be read: {exc}") from None
    _warn_if_shared(path)
    return text


def _warn_if_shared(path: Path) -> None:
    if os.name == "posix" and path.stat().st_mode & 0o077:
        log.warning("the key file %s is readable by other users: chmod 600 it", path)


def _own_key_files(data_dir: Path | None) -> KeySource:
    """The key file in the configuration directory, adopting an older nyla's."""
    new, old = default_key_file(), legacy_key_file(data_dir)
    if old.exists() and not _same_file(old, new):
        _adopt(old, new)
    if not new.exists():
        from cryptography.fernet import Fernet

        try:
            _publish(new, Fernet.generate_key() + b"\n")
        except OSError as exc:
            if not old.exists():
                raise ConfigurationError(
                    f"cannot create the key file {new} ({exc}); set {KEY_SETTING} or "
                    f"{KEY_FILE_SETTING}"
                ) from exc
    keys = parse_keys(_read(new, str(new)), str(new)) if new.exists() else []
    if old.exists() and not _same_file(old, new):
        keys += [k for k in parse_keys(_read(old, str(old)), str(old)) if k not in keys]
    return KeySource(keys, str(new) if new.exists() else str(old))


def _same_file(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def _adopt(old: Path, new: Path) -> None:
    """Move an older nyla's key file to ``new``; leave it in place whenever that cannot be
    done safely (it is then still used)."""
    data = old.read_bytes()
    parse_keys(data.decode("utf-8", "replace"), str(old))
    if new.exists():
        if new.read_bytes().strip() == data.strip():
            old.unlink()
            log.warning("removed %s: the same key is kept in %s", old, new)
        else:
            log.warning(
                "%s holds another key than %s: both are used (the first encrypts); remove the "
                "old one once every connection has been saved again",
                old,
                new,
            )
        return
    try:
        _publish(new, data)
    except OSError as exc:
        log.warning("could not move the key file %s to %s (%s): still using it", old, new, exc)
        return
    if new.read_bytes() == data:
        old.unlink()
        log.warning("moved the key file out of the data directory: %s -> %s", old, new)


def _publish(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (mode 0600) whole or not at all: a temporary file, synced,
    then linked into place, so a process reading it never sees it half written. Another
    process that published first wins (its file is kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".secret-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return
        except OSError:  # no hard links on this file system: create it exclusively instead
            _create_exclusive(path, data)
    finally:
        os.unlink(tmp)


def _create_exclusive(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
