"""Provider settings: API keys and endpoints from environment variables or the user config file.

Lookup order for a setting such as ``OPENAI_API_KEY``: the environment, then the user config
file (``$NYLA_CONFIG``, else ``<user config dir>/nyla/config.toml``), where it may appear at the
top level or under an ``[env]`` table::

    [env]
    OPENAI_API_KEY = "sk-..."
    NYLA_PRIVATE_LLM_BASE_URL = "http://localhost:11434/v1"

The file is read once per process and cached; :func:`reload` forgets the cache (tests).
"""

from __future__ import annotations

import os
from contextvars import ContextVar, Token
from functools import lru_cache
from pathlib import Path
from typing import Any


def config_path() -> Path:
    """Where the user config file is (it need not exist)."""
    explicit = os.environ.get("NYLA_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("nyla")) / "config.toml"


@lru_cache(maxsize=1)
def _file_values() -> dict[str, Any]:
    import tomllib  # here: a command that reads no setting from the file never parses TOML

    path = config_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        import logging

        logging.getLogger(__name__).warning("ignoring unreadable config file %s: %s", path, exc)
        return {}
    values = {k: v for k, v in data.items() if not isinstance(v, dict)}
    values.update(data.get("env", {}) if isinstance(data.get("env"), dict) else {})
    return values


_generation = 0


def reload() -> None:
    """Forget the cached config file (read again on next lookup)."""
    global _generation
    _generation += 1
    _file_values.cache_clear()


_env_seen: dict[Any, Any] = {}
_env_generation = 0
#: the fingerprint pinned for what runs in the current context (see :func:`pin_settings`)
_pinned: ContextVar[tuple[int, int] | None] = ContextVar("nyla_settings_pinned", default=None)


def settings_fingerprint() -> tuple[int, int]:
    """Changes whenever a setting :func:`config_value` reads may have changed (the
    environment, or the config file through :func:`reload`); cheap enough to ask per call:
    the environment is compared with the copy seen last (equal objects first: one pass in C)
    and counted up when it differs. Inside :func:`pin_settings` it is the pinned value."""
    pinned = _pinned.get()
    if pinned is not None:
        return pinned
    global _env_seen, _env_generation
    data = getattr(os.environ, "_data", None)  # the raw mapping: no decoding per item
    current = data if isinstance(data, dict) else dict(os.environ)
    if current != _env_seen:
        _env_seen = dict(current)
        _env_generation += 1
    return _env_generation, _generation


def pin_settings() -> Token[tuple[int, int] | None]:
    """Take the fingerprint once for what the current context does until
    :func:`unpin_settings`: one model call, which asks for it three times (the providers'
    specs, the default model, tracing; ~7k instructions each). A setting changed meanwhile is
    seen by the next call."""
    return _pinned.set(settings_fingerprint())


def unpin_settings(token: Token[tuple[int, int] | None]) -> None:
    """End :func:`pin_settings`."""
    _pinned.reset(token)


_names_read: set[str] = set()


def settings_read() -> frozenset[str]:
    """The settings :func:`config_value` was asked for in this process (what the plugin
    cache keys on, besides the config file)."""
    return frozenset(_names_read)


def config_value(name: str, default: str | None = None) -> str | None:
    """The value of setting ``name`` (environment first, then the config file), or
    ``default``. Empty strings count as unset."""
    _names_read.add(name)
    value = os.environ.get(name)
    if value:
        return value
    file_value = _file_values().get(name)
    if file_value not in (None, ""):
        return str(file_value)
    return default


def missing_reason(name: str) -> str:
    """The message a model shows when setting ``name`` is missing."""
    return f"{name} is not set (environment variable or {config_path()})"
