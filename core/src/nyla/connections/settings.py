"""Typed connection settings: what a connection of a connector needs, declared once.

A connector names a :class:`ConnectorSettings` subclass (``BaseConnector.settings``) whose
fields are declared with :func:`setting`: a kind (``folder``, ``url``, ``text``, ``secret``,
``number``, ``boolean``) that tells a page which input to show, a human label, a help line,
and ``server_only`` for a value that points the server somewhere (a folder on its disk, a URL
it will fetch and send the connection's token to) — a multi-user host takes those only from
its operator. The same model validates what the API and ``nyla connections add`` are given
(:func:`validate_settings`) and is exported as JSON Schema for the page (:func:`describe`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from nyla.errors import NylaError, PermissionDeniedError

SettingKind = Literal["folder", "url", "text", "secret", "number", "boolean"]


class SettingsError(NylaError, ValueError):
    """Settings a connector cannot take (a missing, unknown or malformed value); the message
    names the setting and says what is wrong in words a person reads."""


class ConnectorSettings(BaseModel):
    """Base of a connector's settings model: camelCase keys (as stored and on the wire),
    unknown keys rejected. A connector without settings uses this class as it is."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


def setting(
    default: Any = ...,
    *,
    kind: SettingKind,
    label: str,
    help: str = "",
    server_only: bool = False,
    **constraints: Any,
) -> Any:
    """A field of a :class:`ConnectorSettings` model (``...``: required)."""
    extra: dict[str, Any] = {"kind": kind, "serverOnly": server_only}
    return Field(default, title=label, description=help, json_schema_extra=extra, **constraints)


class SettingField(BaseModel):
    """One field of a settings model as a page renders it (``GET /api/connectors``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    key: str
    label: str
    kind: SettingKind
    required: bool
    help: str = ""
    server_only: bool = False
    default: Any = None


def settings_model(adapter: Any) -> type[ConnectorSettings]:
    """The settings model of ``adapter`` (a connector declaring none takes no settings)."""
    model = getattr(adapter, "settings", None)
    if isinstance(model, type) and issubclass(model, ConnectorSettings):
        return model
    return ConnectorSettings


def _extra(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def fields_of(model: type[ConnectorSettings]) -> list[SettingField]:
    """The model's fields in declaration order."""
    out = []
    for name, info in model.model_fields.items():
        extra = _extra(info)
        out.append(
            SettingField(
                key=info.alias or name,
                label=info.title or name,
                kind=extra.get("kind", "text"),
                required=info.is_required(),
                help=info.description or "",
                server_only=bool(extra.get("serverOnly")),
                default=None if info.is_required() else info.get_default(call_default_factory=True),
            )
        )
    return out


def server_only_keys(adapter: Any) -> frozenset[str]:
    """The keys of ``adapter``'s settings that only an operator may set."""
    return frozenset(f.key for f in fields_of(settings_model(adapter)) if f.server_only)


def check_server_only(adapter: Any, service: str, given: dict[str, Any]) -> None:
    """Refuse a caller who is not the operator a server-only setting
    (:class:`PermissionDeniedError`, naming the settings)."""
    model = settings_model(adapter)
    names = {info.alias or name: name for name, info in model.model_fields.items()}
    reserved = sorted(
        key for key in server_only_keys(adapter) if key in given or names[key] in given
    )
    if reserved:
        raise PermissionDeniedError(
            f"{', '.join(reserved)} of {service} points the server at a folder or URL of "
            "the caller's choosing; only a sysadmin can set it"
        )


def validate_settings(adapter: Any, service: str, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` checked against ``adapter``'s settings model: the settings to store (by
    their camelCase keys, only those given or required), or a :class:`SettingsError` that
    names each bad setting."""
    model = settings_model(adapter)
    try:
        parsed = model.model_validate(given)
    except ValidationError as exc:
        raise SettingsError(_explain(model, service, exc)) from None
    return parsed.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)


def _explain(model: type[ConnectorSettings], service: str, exc: ValidationError) -> str:
    labels = {info.alias or name: info.title or name for name, info in model.model_fields.items()}
    known = ", ".join(labels) or "none"
    lines = []
    for error in exc.errors():
        key = str(error["loc"][0]) if error["loc"] else ""
        what = f"{labels[key]} ({key})" if key in labels else repr(key)
        if error["type"] == "missing":
            lines.append(f"{what} is required")
        elif error["type"] == "extra_forbidden":
            lines.append(f"there is no setting {key!r} (its settings: {known})")
        else:
            lines.append(f"{what}: {error['msg'].removeprefix('Value error, ')}")
    return f"{service}: " + "; ".join(lines)


def describe(adapter: Any) -> dict[str, Any]:
    """What a page needs to connect ``adapter``'s service (``GET /api/connectors``): its
    label, how it signs in, and its settings as JSON Schema and as a list of fields."""
    model = settings_model(adapter)
    return {
        "label": getattr(adapter, "label", "") or getattr(adapter, "service", ""),
        "auth": auth_of(adapter),
        "adminConsent": bool(getattr(adapter, "admin_consent", False)),
        "settingsSchema": model.model_json_schema(by_alias=True),
        "fields": [f.model_dump(mode="json", by_alias=True) for f in fields_of(model)],
    }


def auth_of(adapter: Any) -> Literal["oauth", "token", "none"]:
    """How a connection of ``adapter`` signs in on a page: ``oauth`` (a browser sign-in),
    ``none`` (nothing to sign in to, e.g. a local folder) or ``token`` (a pasted API token)."""
    oauth = getattr(adapter, "oauth", None)
    if oauth is not None and getattr(oauth, "authorize_url", None):
        return "oauth"
    if "none" in tuple(getattr(adapter, "auth_modes", ()) or ()):
        return "none"
    return "token"
