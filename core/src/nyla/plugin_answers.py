"""Checks on what a plugin's contribution hooks answer: the hooks and the types they must
return, the answer check, toolboxes without their broken tools, a provider's models."""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from typing import Any

from nyla.plugin_record import PluginRecord

log = logging.getLogger("nyla.plugins")

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# hook name -> (contribution kind, expected type resolver, id attribute)
CONTRIBUTION_HOOKS: dict[str, tuple[str, str, str]] = {
    "nyla_providers": ("providers", "nyla.models.ai:Provider", "id"),
    "nyla_toolboxes": ("toolboxes", "nyla.models.tools:Toolbox", "id"),
    "nyla_connectors": ("connectors", "nyla.models.datasource:ConnectorAdapter", "service"),
    "nyla_walkers": ("walkers", "nyla.models.datasource:Walker", "id"),
    "nyla_features": ("features", "nyla.models.feature:Feature", "code"),
    "nyla_neutralizers": ("neutralizers", "nyla.models.neutralize:Neutralizer", "id"),
}


SINGULAR = {
    "providers": "provider",
    "toolboxes": "toolbox",
    "connectors": "connector",
    "walkers": "walker",
    "features": "feature",
    "neutralizers": "neutralizer",
    "tools": "tool",
}


def resolve(path: str) -> Any:
    """The object a ``module:attr`` path names."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def check_answers(hook_name: str, answers: list[Any], expected: type) -> tuple[str | None, list]:
    """``(problem, items)`` for what a plugin's implementation(s) of a contribution hook
    answered through pluggy (one answer per implementation; ``None`` answers are dropped)."""
    items: list[Any] = []
    for answer in answers:
        if not isinstance(answer, list | tuple):
            if inspect.iscoroutine(answer):
                answer.close()
                return f"{hook_name}() is async; contribution hooks must be sync", []
            return (
                f"{hook_name}() returned {type(answer).__name__}, "
                f"expected a list of {expected.__name__}",
                [],
            )
        items.extend(answer)
    bad = [item for item in items if not isinstance(item, expected)]
    if bad:
        return f"{hook_name}() returned {type(bad[0]).__name__}, expected {expected.__name__}", []
    return None, items


def check_tool_schema(tool: Any) -> list[str]:
    """What a model API would reject in a tool: an invalid name or JSON schema, or arguments
    that are not an object (the plugin host leaves such a tool out)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    out = []
    if not TOOL_NAME.match(tool.name):
        out.append(f"tool name {tool.name!r} is not a valid function name")
    try:
        Draft202012Validator.check_schema(tool.parameters)
    except SchemaError as exc:
        out.append(f"tool {tool.name!r} has an invalid JSON schema: {exc.message}")
    if tool.parameters.get("type") != "object":
        out.append(f"tool {tool.name!r}: the schema of its arguments must be an object")
    return out


def without_broken_tools(record: PluginRecord, toolbox: Any) -> Any:
    """The toolbox without tools a model API would reject (invalid name or JSON schema),
    each left out with a warning on the plugin."""
    kept = []
    for tool in toolbox.tools:
        problems = check_tool_schema(tool)
        if problems:
            record.warn(f"toolbox {toolbox.id}: left out: {'; '.join(problems)}")
        else:
            kept.append(tool)
    if len(kept) == len(toolbox.tools):
        return toolbox
    return toolbox.model_copy(update={"tools": kept})


def safe_models(provider: Any) -> list[Any]:
    """A provider's model specs (none, with a warning, when ``models()`` raises)."""
    specs = _listed(provider)
    return specs if specs is not None else []


def _listed(provider: Any) -> list[Any] | None:
    try:
        return list(provider.models())
    except Exception as exc:  # a provider whose models() breaks lists nothing
        log.warning("provider %s: models() failed: %s", getattr(provider, "id", "?"), exc)
        return None


class ModelCache:
    """Each provider's model specs, asked again only when a setting changed.

    Every model call selects its model from every provider's specs; building them (a dozen
    pydantic models per provider, a package probe for the local one) cost 0.7 ms with the
    built-in plugins, more than the rest of a round of the agent loop. A provider's specs
    depend on its settings (API keys, endpoints: the environment and the config file), so
    they are kept until :func:`~nyla.config.settings_fingerprint` changes. A provider
    whose list changes for other reasons sets ``models_cacheable = False``.
    """

    def __init__(self) -> None:
        self._specs: dict[int, tuple[Any, list[Any]]] = {}
        self._all: tuple[tuple[Any, ...], list[Any]] | None = None
        self._fingerprint: tuple[int, int] | None = None

    def models(self, providers: list[Any]) -> list[Any]:
        """Every spec of ``providers`` in order (see :func:`safe_models`), from the cache
        while the settings are unchanged."""
        from nyla.config import settings_fingerprint

        fingerprint = settings_fingerprint()
        if fingerprint != self._fingerprint:
            self._specs.clear()
            self._all = None
            self._fingerprint = fingerprint
        key = tuple(providers)
        if self._all is not None and self._all[0] == key:
            return list(self._all[1])
        out: list[Any] = []
        complete = True
        for provider in providers:
            specs, kept = self._provider_models(provider)
            complete = complete and kept
            out.extend(specs)
        if complete:
            self._all = (key, out)
        return list(out)

    def _provider_models(self, provider: Any) -> tuple[list[Any], bool]:
        """``provider``'s specs and whether they are kept (not when the provider opted out
        or its ``models()`` failed: a failure is asked again next time)."""
        if not getattr(provider, "models_cacheable", True):
            return safe_models(provider), False
        hit = self._specs.get(id(provider))
        if hit is not None and hit[0] is provider:
            return hit[1], True
        specs = _listed(provider)
        if specs is None:  # a failure is not kept: asked again next time
            return [], False
        self._specs[id(provider)] = (provider, specs)
        return specs, True
