"""Configurable RAG limits (seeds: ``_ragLimits``).

Two sources, nothing else: the central defaults below, and the explicit overrides a data
source stores in ``settings["ragLimits"]`` (camelCase keys, bytes in bytes). There is no
inheritance, no resolver and no override layer: what the settings hold is exactly what a
walker reads.

- :func:`get_stored_overrides` returns ONLY the explicitly set overrides.
- :func:`get_rag_limits` merges the overrides onto the central defaults: what every sync
  reads at its start (a caller's ``limits=`` may only narrow them, e.g. a first slice), the
  API and the cost estimate.

Every limit is a whole number in a range its pydantic model (:class:`FilesLimits`,
:class:`ClickupLimits`) states with ``ge``/``le``: an update outside it is refused by name
(:func:`check_limit`), and :func:`limit_ranges` gives the ranges to the API and the page.

Python dicts use snake_case keys (``max_bytes``); the stored JSON uses the seeds' camelCase.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from nyla.errors import NylaError

LimitKind = Literal["files", "clickup"]

MB = 1024 * 1024
GB = 1024 * MB


class _Limits(BaseModel):
    """A set of RAG limits: whole numbers (no floats, strings or booleans) in a range each;
    camelCase on the wire and in the stored settings."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, strict=True, extra="forbid"
    )


class FilesLimits(_Limits):
    """Limits of file-like sources (local folders, WebDAV, SharePoint/OneDrive, Drive)."""

    max_bytes: int = Field(
        default=500 * MB,
        ge=1,
        le=1024 * GB,
        description="bytes of the source indexed, unchanged files included (up to 1 TiB)",
    )
    max_file_size: int = Field(
        default=25 * MB,
        ge=1,
        le=2 * GB,
        description="bytes of one file; larger ones are skipped (up to 2 GiB: held in memory)",
    )
    max_items: int = Field(
        default=5000,
        ge=1,
        le=10_000_000,
        description="files of the source indexed (up to 10 million)",
    )
    max_depth: int = Field(
        default=10, ge=1, le=256, description="folder levels walked below the source (up to 256)"
    )


class ClickupLimits(_Limits):
    """Limits of ClickUp sources."""

    max_tasks: int = Field(
        default=2000,
        ge=1,
        le=1_000_000,
        description="tasks of the source indexed (up to 1 million)",
    )
    max_workspaces: int = Field(
        default=5, ge=1, le=1000, description="workspaces walked (up to 1000)"
    )
    max_lists_per_workspace: int = Field(
        default=50, ge=1, le=100_000, description="lists walked per workspace (up to 100,000)"
    )


#: the model of each kind's limits: its fields' ``ge``/``le`` are the documented ranges
LIMIT_MODELS: dict[str, type[_Limits]] = {"files": FilesLimits, "clickup": ClickupLimits}

FILES_LIMITS_DEFAULT: dict[str, int] = FilesLimits().model_dump()
CLICKUP_LIMITS_DEFAULT: dict[str, int] = ClickupLimits().model_dump()
DEFAULTS: dict[str, dict[str, int]] = {
    "files": FILES_LIMITS_DEFAULT,
    "clickup": CLICKUP_LIMITS_DEFAULT,
}


def _bounds(kind: str, name: str) -> tuple[int, int]:
    low = high = None
    for rule in LIMIT_MODELS[kind].model_fields[name].metadata:
        low = getattr(rule, "ge", low)
        high = getattr(rule, "le", high)
    assert low is not None and high is not None, f"{kind} limit {name} has no range"
    return low, high


def limit_ranges(kind: LimitKind) -> dict[str, dict[str, int]]:
    """The allowed range of each limit of ``kind``, by its camelCase key:
    ``{"maxBytes": {"min": 1, "max": 1099511627776}, ...}``."""
    ranges = {}
    for name in DEFAULTS[kind]:
        low, high = _bounds(kind, name)
        ranges[to_camel(name)] = {"min": low, "max": high}
    return ranges


def check_limit(kind: LimitKind, key: str, value: Any) -> int:
    """``value`` when it is a whole number in the range of limit ``key`` (camelCase or
    snake_case) of ``kind``; :class:`SettingsValidationError` naming the key and the range
    otherwise."""
    name = to_snake(key)
    try:
        LIMIT_MODELS[kind].model_validate({name: value})
    except ValidationError:
        low, high = _bounds(kind, name)
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole:
            why = "must be a whole number"
        elif value < low:
            why = f"must be at least {low}"
        else:
            why = f"must be at most {high}"
        raise SettingsValidationError(
            f"limit {key!r} {why}: a positive integer from {low} to {high}, got {value!r}"
        ) from None
    return int(value)


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
    """The limits the data source sets explicitly (snake_case), nothing else. A stored value
    that is no whole number above zero is ignored; one above its range (stored before the
    ranges existed) counts as the range's end."""
    stored = _settings_of(data_source).get("ragLimits") or {}
    allowed = DEFAULTS[kind]
    out: dict[str, int] = {}
    for key, value in stored.items():
        name = to_snake(key)
        if name in allowed and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[name] = min(value, _bounds(kind, name)[1])
    return out


def get_rag_limits(data_source: Any, kind: LimitKind) -> dict[str, int]:
    """Central defaults with the data source's overrides on top."""
    return {**DEFAULTS[kind], **get_stored_overrides(data_source, kind)}


def merge_settings_patch(
    current: Mapping[str, Any] | None, patch: Mapping[str, Any], kind: LimitKind
) -> dict[str, Any]:
    """``current`` settings with ``patch`` applied: only ``ragLimits`` is accepted; its keys
    must be limits of ``kind`` (camelCase or snake_case) with whole numbers in their ranges
    (:func:`limit_ranges`), or ``null`` to remove an override. Anything else raises :class:`SettingsValidationError`."""
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
        merged[camel] = check_limit(kind, key, value)
    settings = dict(current or {})
    settings["ragLimits"] = merged
    return settings
