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
    global _generation, _fingerprint
    _generation += 1
    _fingerprint = (_env_generation, _generation)
    _file_values.cache_clear()


class _WatchedEnviron(dict[Any, Any]):
    """The mapping behind ``os.environ`` (its ``_data``), counting the writes to it, so that
    :func:`settings_fingerprint` compares the environment only after one (``os.environ``
    writes through ``__setitem__``/``__delitem__``; the other mutators count too)."""

    __slots__ = ("writes",)

    def __init__(self, data: dict[Any, Any]) -> None:
        super().__init__(data)
        self.writes = 0

    def __setitem__(self, key: Any, value: Any) -> None:
        self.writes += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self.writes += 1
        super().__delitem__(key)

    def __ior__(self, other: Any) -> Any:  # type: ignore[misc]
        self.writes += 1
        return super().__ior__(other)

    def pop(self, *args: Any) -> Any:
        self.writes += 1
        return super().pop(*args)

    def popitem(self) -> Any:
        self.writes += 1
        return super().popitem()

    def clear(self) -> None:
        self.writes += 1
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.writes += 1
        super().update(*args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self.writes += 1
        return super().setdefault(key, default)


def _watch_environ() -> None:
    """Put a :class:`_WatchedEnviron` behind ``os.environ`` (and ``os.environb``, which
    shares its mapping); an environment that is not a plain ``_Environ`` stays unwatched."""
    data = getattr(os.environ, "_data", None)
    if type(data) is not dict:
        return
    watched = _WatchedEnviron(data)
    environb = getattr(os, "environb", None)
    if environb is not None and getattr(environb, "_data", None) is data:
        environb._data = watched
    os.environ._data = watched  # type: ignore[attr-defined]


_watch_environ()
_env_seen: dict[Any, Any] = {}
_env_generation = 0
#: the writes to the watched environment when it was last compared (-1: never)
_writes_seen = -1
#: what :func:`settings_fingerprint` returns while nothing changed
_fingerprint = (_env_generation, _generation)
#: the fingerprint pinned for what runs in the current context (see :func:`pin_settings`)
_pinned: ContextVar[tuple[int, int] | None] = ContextVar("nyla_settings_pinned", default=None)


def settings_fingerprint() -> tuple[int, int]:
    """Changes whenever a setting :func:`config_value` reads may have changed (the
    environment, or the config file through :func:`reload`); cheap enough to ask per call:
    the environment is compared with the copy seen last (equal objects first: one pass in C)
    and counted up when it differs. The watched environment (:class:`_WatchedEnviron`) is
    compared only after a write to it. Inside :func:`pin_settings` it is the pinned value."""
    pinned = _pinned.get()
    if pinned is not None:
        return pinned
    global _env_seen, _env_generation, _writes_seen, _fingerprint
    data = getattr(os.environ, "_data", None)  # the raw mapping: no decoding per item
    if type(data) is _WatchedEnviron:
        writes = data.writes  # read before the compare: a write during it is seen next time
        if writes == _writes_seen:
            return _fingerprint
        _writes_seen = writes
    else:
        _writes_seen = -1  # os.environ was replaced: compare every time
    current = data if isinstance(data, dict) else dict(os.environ)
    if current != _env_seen:
        _env_seen = dict(current)
        _env_generation += 1
        _fingerprint = (_env_generation, _generation)
    return _fingerprint


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
