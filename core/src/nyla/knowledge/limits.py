"""Configurable RAG limits (seeds: ``_ragLimits``).

Two sources, nothing else: the central defaults below, and the explicit overrides a data
source stores in ``settings["ragLimits"]`` (camelCase keys, bytes in bytes). There is no
inheritance, no resolver and no override layer: what the settings hold is exactly what a
walker reads.

- :func:`get_stored_overrides` returns ONLY the explicitly set overrides; a walker merges them
  onto the ``limits=`` its caller supplied (a test override still wins where nothing is set).
- :func:`get_rag_limits` merges the overrides onto the central defaults (API and cost path).

Python dicts use snake_case keys (``max_bytes``); the stored JSON uses the seeds' camelCase.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic.alias_generators import to_camel, to_snake

from nyla.errors import NylaError

LimitKind = Literal["files", "clickup"]

MB = 1024 * 1024

FILES_LIMITS_DEFAULT: dict[str, int] = {
    "max_bytes": 500 * MB,
    "max_file_size": 25 * MB,
    "max_items": 5000,
    "max_depth": 10,
}
CLICKUP_LIMITS_DEFAULT: dict[str, int] = {
    "max_tasks": 2000,
    "max_workspaces": 5,
    "max_lists_per_workspace": 50,
}
DEFAULTS: dict[str, dict[str, int]] = {
    "files": FILES_LIMITS_DEFAULT,
    "clickup": CLICKUP_LIMITS_DEFAULT,
}

#: the only top-level key a settings update may carry
SETTINGS_KEYS = frozenset({"ragLimits"})


class SettingsValidationError(NylaError, ValueError):
    """A data-source settings update was rejected; the message names the offending key."""


def kind_for_service(service: str | None) -> LimitKind:
    """Which limit set applies to a connector service (ClickUp has its own)."""
    return "clickup" if (service or "").lower() == "clickup" else "files"


def _settings_of(data_source: Any) -> Mapping[str, Any]:
    settings = (
        data_source.get("settings")
        if isinstance(data_source, Mapping)
        else getattr(data_source, "settings", None)
    )
    return settings or {}


def get_stored_overrides(data_source: Any, kind: LimitKind) -> dict[str, int]:
    """The limits the data source sets explicitly (snake_case), nothing else."""
    stored = _settings_of(data_source).get("ragLimits") or {}
    allowed = DEFAULTS[kind]
    out: dict[str, int] = {}
    for key, value in stored.items():
        name = to_snake(key)
        if name in allowed and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[name] = value
    return out


def get_rag_limits(data_source: Any, kind: LimitKind) -> dict[str, int]:
    """Central defaults with the data source's overrides on top."""
    return {**DEFAULTS[kind], **get_stored_overrides(data_source, kind)}


def merge_settings_patch(
    current: Mapping[str, Any] | None, patch: Mapping[str, Any], kind: LimitKind
) -> dict[str, Any]:
    """``current`` settings with ``patch`` applied: only ``ragLimits`` is accepted; its keys
    must be limits of ``kind`` (camelCase or snake_case) with positive integers, or ``null``
    to remove an override. Anything else raises :class:`SettingsValidationError`."""
    if not isinstance(patch, Mapping):
        raise SettingsValidationError("settings must be an object")
    unknown = sorted(set(patch) - SETTINGS_KEYS)
    if unknown:
        raise SettingsValidationError(
            f"unknown settings key(s) {', '.join(unknown)}: only 'ragLimits' may be changed"
        )
    limits_patch = patch.get("ragLimits")
    if not isinstance(limits_patch, Mapping):
        raise SettingsValidationError("'ragLimits' must be an object of limits")
    allowed = DEFAULTS[kind]
    merged = dict((current or {}).get("ragLimits") or {})
    for key, value in limits_patch.items():
        name = to_snake(key)
        if name not in allowed:
            raise SettingsValidationError(
                f"unknown {kind} limit {key!r}; allowed: " + ", ".join(to_camel(k) for k in allowed)
            )
        camel = to_camel(name)
        if value is None:
            merged.pop(camel, None)
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SettingsValidationError(
                f"limit {key!r} must be a positive integer, got {value!r}"
            )
        merged[camel] = value
    settings = dict(current or {})
    settings["ragLimits"] = merged
    return settings
