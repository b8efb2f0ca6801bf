"""Checks on what a plugin's contribution hooks answer: the hooks and the types they must
return, the answer check, toolboxes without their broken tools, a provider's models."""

from __future__ import annotations

import ast
import importlib
import inspect
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from nyla import hookspecs
from nyla.plugin_record import PluginRecord

if TYPE_CHECKING:
    from nyla.models.tools import Toolbox

log = logging.getLogger("nyla.plugins")

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

T = TypeVar("T")


@dataclass(frozen=True)
class Contribution(Generic[T]):
    """One contribution hook and the registry it fills, typed by the hookspec itself: a
    ``Contribution`` of ``hookspecs.nyla_providers`` (``-> list[Provider]``) builds a
    ``dict[str, Provider]`` for a type checker, and checks each answer against ``Provider``
    at run time (the return annotation, read from the hookspec)."""

    #: the hookspec, whose return annotation ``list[X]`` names the item type
    spec: Callable[[], list[T]]
    #: the attribute of an item that is its id in the registry (unique across plugins)
    id_attr: str
    #: one item, in messages ("provider id 'x' is already registered ...")
    singular: str

    @property
    def hook(self) -> str:
        """The hook's name (``nyla_providers``)."""
        return self.spec.__name__

    @property
    def kind(self) -> str:
        """The registry's name on the plugin host (``providers``)."""
        return self.hook.removeprefix("nyla_")

    def registry(self) -> dict[str, T]:
        """An empty registry of this hook's items, by id."""
        return {}

    def key(self, item: T) -> str:
        """The id ``item`` is registered under."""
        return str(getattr(item, self.id_attr))

    def item_type(self) -> type[T]:
        """The class every item must be an instance of (``X`` of the hookspec's ``list[X]``)."""
        return _item_type(self.hook)


PROVIDERS = Contribution(hookspecs.nyla_providers, "id", "provider")
TOOLBOXES = Contribution(hookspecs.nyla_toolboxes, "id", "toolbox")
CONNECTORS = Contribution(hookspecs.nyla_connectors, "service", "connector")
WALKERS = Contribution(hookspecs.nyla_walkers, "id", "walker")
FEATURES = Contribution(hookspecs.nyla_features, "code", "feature")
NEUTRALIZERS = Contribution(hookspecs.nyla_neutralizers, "id", "neutralizer")
METHODS = Contribution(hookspecs.nyla_methods, "name", "method")
SETTINGS_SECTIONS = Contribution(hookspecs.nyla_settings_sections, "id", "settings section")

#: the contribution hooks, in the order they are called
CONTRIBUTIONS: tuple[Contribution[Any], ...] = (
    PROVIDERS,
    TOOLBOXES,
    CONNECTORS,
    WALKERS,
    FEATURES,
    NEUTRALIZERS,
    METHODS,
    SETTINGS_SECTIONS,
)

#: kind -> its contribution
BY_KIND: dict[str, Contribution[Any]] = {c.kind: c for c in CONTRIBUTIONS}

SINGULAR = {**{c.kind: c.singular for c in CONTRIBUTIONS}, "tools": "tool"}


@cache
def _item_type(hook: str) -> Any:
    """``X`` of the return annotation ``list[X]`` of ``hookspecs.<hook>``, imported from the
    module the hookspecs name it from (under ``TYPE_CHECKING``, so ``import nyla`` stays
    light: the models load when the first plugin host is built)."""
    annotation = getattr(hookspecs, hook).__annotations__["return"]
    node = ast.parse(str(annotation), mode="eval").body
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name)):
        raise TypeError(f"hookspecs.{hook} must return list[X], not {annotation}")
    return getattr(importlib.import_module(_contract_modules()[node.slice.id]), node.slice.id)


@cache
def _contract_modules() -> dict[str, str]:
    """name -> module of every ``from nyla... import name`` in the hookspecs' ``if
    TYPE_CHECKING:`` block."""
    tree = ast.parse(inspect.getsource(hookspecs))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and (imp.module or "").startswith("nyla."):
                    found.update((a.asname or a.name, str(imp.module)) for a in imp.names)
    return found


def check_answers(
    hook_name: str, answers: list[Any], expected: type[T]
) -> tuple[str | None, list[T]]:
    """``(problem, items)`` for what a plugin's implementation(s) of a contribution hook
    answered through pluggy (one answer per implementation; ``None`` answers are dropped)."""
    items: list[T] = []
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
    from nyla.plugin_schema import plainly_valid

    out = []
    if not TOOL_NAME.match(tool.name):
        out.append(f"tool name {tool.name!r} is not a valid function name")
    if not plainly_valid(tool.parameters):  # else the meta-schema check, 10 ms a tool
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(tool.parameters)
        except SchemaError as exc:
            out.append(f"tool {tool.name!r} has an invalid JSON schema: {exc.message}")
    if tool.parameters.get("type") != "object":
        out.append(f"tool {tool.name!r}: the schema of its arguments must be an object")
    return out


def without_broken_tools(record: PluginRecord, toolbox: Toolbox) -> Toolbox:
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
        # imported here, once: an import statement in models() costs ~7k instructions a
        # model call on Python 3.11 (two AttributeErrors made while it checks the module)
        from nyla.config import settings_fingerprint

        self._settings_fingerprint = settings_fingerprint
        self._specs: dict[int, tuple[Any, list[Any]]] = {}
        self._all: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
        self._fingerprint: tuple[int, int] | None = None

    def models(self, providers: list[Any]) -> list[Any]:
        """Every spec of ``providers`` in order (see :func:`safe_models`), from the cache
        while the settings are unchanged."""
        return list(self.specs(tuple(providers)))

    def specs(self, providers: tuple[Any, ...]) -> tuple[Any, ...]:
        """:meth:`models` as a tuple, the same object while the settings and ``providers``
        are (what the AI service's model chains compare by identity on every model call;
        the list's copies cost ~2k instructions a call)."""
        fingerprint = self._settings_fingerprint()
        if fingerprint != self._fingerprint:
            self._specs.clear()
            self._all = None
            self._fingerprint = fingerprint
        kept = self._all
        if kept is not None and kept[0] == providers:
            return kept[1]
        out: list[Any] = []
        complete = True
        for provider in providers:
            specs, cached = self._provider_models(provider)
            complete = complete and cached
            out.extend(specs)
        listed = tuple(out)
        if complete:
            self._all = (providers, listed)
        return listed

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
