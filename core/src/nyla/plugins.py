"""Plugin discovery, registration and the typed registries built from them.

stevedore reads each entry-point group (names are filtered before anything is imported),
pluggy registers what loaded, then every contribution hook is called through pluggy *per
plugin* (a subset caller holding only that plugin's implementations) so that one broken plugin
(fails to import, raises in a hook, returns the wrong type, implements an unknown hook, or
claims an id another plugin holds) is reported with its name and reason and left out while
the host keeps running with the rest. Softer problems (a hook that returns ``None`` instead of
a list, a tool whose JSON schema is invalid, which is left out) are warnings on the plugin's
record; ``NYLA_STRICT_PLUGINS=1`` makes failures and warnings alike an error.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pluggy

from nyla import hookspecs
from nyla.errors import PluginError
from nyla.plugin_answers import (
    BY_KIND,
    CONNECTORS,
    CONTRIBUTIONS,
    FEATURES,
    METHODS,
    NEUTRALIZERS,
    PROVIDERS,
    SETTINGS_SECTIONS,
    SINGULAR,
    TOOLBOXES,
    WALKERS,
    ModelCache,
    check_answers,
    safe_models,
    without_broken_tools,
)
from nyla.plugin_record import BUILTIN_GROUP, PluginRecord

if TYPE_CHECKING:
    from nyla.models.ai import ModelSpec
    from nyla.models.tools import Tool

log = logging.getLogger(__name__)

ENTRY_POINT_GROUPS: tuple[str, ...] = (
    "nyla.providers",
    "nyla.toolboxes",
    "nyla.connectors",
    "nyla.walkers",
    "nyla.features",
    "nyla.neutralizers",
    "nyla.hosts",
)

# The kernel's own defaults, registered through the same hooks as any plugin (name, module).
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("nyla.neutralizer", "nyla.ai.default_neutralizer"),
    ("nyla.core_tools", "nyla.tools.core"),
    ("nyla.ai_tools", "nyla.tools.ai"),
    ("nyla.datasource_tools", "nyla.tools.datasources"),
    ("nyla.feature_data_tools", "nyla.tools.feature_data"),
    ("nyla.methods", "nyla.actions.seed"),
    ("nyla.workflow_tools", "nyla.actions.workflow_tools"),
)


def _env_list(name: str) -> list[str] | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    return [p.strip() for p in raw.split(",") if p.strip()]


def strict_mode() -> bool:
    """True when ``NYLA_STRICT_PLUGINS`` asks for load failures to be errors."""
    return os.environ.get("NYLA_STRICT_PLUGINS", "").lower() not in ("", "0", "false", "no")


def _entry_points(group: str) -> list[Any]:
    """Entry points of a group without importing them (stevedore's cache when available)."""
    try:
        from stevedore import ExtensionManager, _cache

        cached = ExtensionManager.ENTRY_POINT_CACHE.get(group)
        if cached is not None:
            return list(cached)
        return list(_cache.get_group_all(group))
    except Exception:  # pragma: no cover - stevedore internals changed
        from importlib import metadata

        return list(metadata.entry_points(group=group))


class PluginHost:
    """The registered plugins and the typed registries built from their hooks.

    Build it with :meth:`discover` (entry points + built-ins) or :meth:`from_plugins` (an
    explicit list, for tests and embedding hosts).
    """

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        # each typed by its hookspec's return annotation (dict[str, Provider], ...)
        self.providers = PROVIDERS.registry()
        self.toolboxes = TOOLBOXES.registry()
        self.connectors = CONNECTORS.registry()
        self.walkers = WALKERS.registry()
        self.features = FEATURES.registry()
        self.neutralizers = NEUTRALIZERS.registry()
        self.methods = METHODS.registry()
        self.settings_sections = SETTINGS_SECTIONS.registry()
        self._owners: dict[tuple[str, str], str] = {}
        self._model_cache = ModelCache()

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def discover(cls, *, builtins: bool = True, strict: bool | None = None) -> PluginHost:
        """Load the built-ins and every installed plugin (respecting ``NYLA_PLUGINS``,
        ``NYLA_DISABLE_PLUGINS``; ``NYLA_STRICT_PLUGINS=1`` raises on any failure)."""
        host = cls()
        if builtins:
            host._load_builtins()
        host._load_entry_points()
        host._collect()
        if strict is None:
            strict = strict_mode()
        if strict:
            host.raise_on_failures()
        return host

    @classmethod
    def from_plugins(
        cls, plugins: Iterable[Any], *, builtins: bool = False, names: Iterable[str] | None = None
    ) -> PluginHost:
        """A host from explicit plugin objects (modules or instances), independent of what is
        installed. ``builtins=True`` adds the kernel's defaults first."""
        host = cls()
        if builtins:
            host._load_builtins()
        plugin_list = list(plugins)
        name_list = list(names) if names is not None else [None] * len(plugin_list)
        for obj, name in zip(plugin_list, name_list, strict=True):
            pname = name or getattr(obj, "__name__", None) or type(obj).__name__
            host._register(obj, PluginRecord(pname, "explicit", pname))
        host._collect()
        return host

    def _load_builtins(self) -> None:
        for name, module_path in BUILTIN_PLUGINS:
            try:
                module = importlib.import_module(module_path)
            except Exception as exc:
                self.records[name] = PluginRecord(
                    name, BUILTIN_GROUP, module_path, status="failed", error=f"import: {exc!r}"
                )
                continue
            self._register(module, PluginRecord(name, BUILTIN_GROUP, module_path))

    def _load_entry_points(self) -> None:
        from stevedore import NamedExtensionManager

        only = _env_list("NYLA_PLUGINS")
        disabled = set(_env_list("NYLA_DISABLE_PLUGINS") or [])
        self._check_selection(only, disabled)
        for group in ENTRY_POINT_GROUPS:
            eps = _entry_points(group)
            names: list[str] = []
            for ep in eps:
                if ep.name in self.records:
                    held = self.records[ep.name]
                    if held.entry_point != ep.value:  # the same object in two groups loads once
                        rec = PluginRecord(ep.name, group, ep.value)
                        rec.fail(
                            f"plugin name {ep.name!r} is already used by "
                            f"{held.entry_point or 'a built-in'} ({held.group}); rename it"
                        )
                        self.records[f"{ep.name}@{group}"] = rec
                    continue
                if (only is not None and ep.name not in only) or ep.name in disabled:
                    self.records[ep.name] = PluginRecord(
                        ep.name,
                        group,
                        ep.value,
                        status="disabled",
                        error="disabled by NYLA_PLUGINS / NYLA_DISABLE_PLUGINS",
                    )
                    continue
                names.append(ep.name)
            if not names:
                continue
            values = {ep.name: ep.value for ep in eps}

            def on_failure(_manager: Any, ep: Any, exc: BaseException, group: str = group) -> None:
                self.records[ep.name] = PluginRecord(
                    ep.name,
                    group,
                    ep.value,
                    status="failed",
                    error=f"import failed: {type(exc).__name__}: {exc}",
                )

            manager = NamedExtensionManager(
                group,
                names,
                on_load_failure_callback=on_failure,
                on_missing_entrypoints_callback=lambda _missing: None,
            )
            for ext in manager.extensions:
                if ext.name in self.records:  # a name held by an earlier group or a built-in
                    rec = PluginRecord(ext.name, group, values.get(ext.name, ""))
                    rec.fail(f"plugin name {ext.name!r} is already used by another plugin")
                    self.records[f"{ext.name}@{group}"] = rec
                    continue
                self._register(ext.plugin, PluginRecord(ext.name, group, values.get(ext.name, "")))

    def _unknown_hook(self, obj: Any, attr: str) -> bool:
        """Whether ``attr`` is marked as a hook implementation of a hook nyla does not have
        (``specname`` counts, so a wrapper may carry another name)."""
        opts = self.pm.parse_hookimpl_opts(obj, attr)
        if opts is None:
            return False
        return not hasattr(self.pm.hook, opts.get("specname") or attr)

    def _check_selection(self, only: list[str] | None, disabled: set[str]) -> None:
        """Unknown names in ``NYLA_PLUGINS`` / ``NYLA_DISABLE_PLUGINS`` are an error naming the
        known ones (a typo would otherwise disable every plugin without a word);
        ``NYLA_PLUGINS=none`` loads only the kernel's built-ins."""
        known = {ep.name for group in ENTRY_POINT_GROUPS for ep in _entry_points(group)}
        known |= set(self.records)
        for variable, names in (("NYLA_PLUGINS", only or []), ("NYLA_DISABLE_PLUGINS", disabled)):
            unknown = sorted(set(names) - known - {"none"})
            if unknown:
                raise PluginError(
                    f"{variable} names unknown plugin(s): {', '.join(unknown)}; "
                    f"known: {', '.join(sorted(known))}"
                )

    def _register(self, obj: Any, record: PluginRecord) -> None:
        self.records[record.name] = record
        record.plugin = obj
        unknown = [
            attr for attr in dir(obj) if attr.startswith("nyla_") and self._unknown_hook(obj, attr)
        ]
        if unknown:
            record.fail(f"implements unknown hook(s): {', '.join(unknown)} (misspelt?)")
            return
        try:
            self.pm.register(obj, name=record.name)
        except Exception as exc:  # signature mismatch, duplicate registration
            record.fail(f"registration failed: {exc}")
            return
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(obj)
            record.fail(f"hook validation failed: {exc}")
            return
        record.hooks = sorted(hc.name for hc in (self.pm.get_hookcallers(obj) or []))

    # ---- collection ---------------------------------------------------------------------

    def add_plugin(self, obj: Any, name: str, *, group: str = "explicit") -> PluginRecord:
        """Register one more plugin on a built host (e.g. scripted policies an eval asks for),
        with the same isolation as discovery; returns its record (check ``status``)."""
        if name in self.records:
            raise PluginError(f"a plugin named {name!r} is already registered")
        self._register(obj, PluginRecord(name, group, getattr(obj, "__module__", name)))
        if self.records[name].status == "ok":
            self._collect(only={name})
        return self.records[name]

    def _collect(self, only: set[str] | None = None) -> None:
        """Call every contribution hook per plugin, type-check, detect id clashes."""
        pending: dict[str, dict[str, list[Any]]] = {}
        for record in list(self.records.values()):
            if record.status != "ok" or (only is not None and record.name not in only):
                continue
            contributions = self._contributions_of(record)
            if contributions is not None:
                pending[record.name] = contributions
        # Built-ins first, then plugins in name order: the first holder of an id keeps it.
        order = sorted(pending, key=lambda n: (self.records[n].group != BUILTIN_GROUP, n))
        for name in order:
            record = self.records[name]
            contributions = pending[name]
            clash = self._find_clash(name, contributions)
            if clash:
                self._drop(record, clash)
                continue
            for kind, items in contributions.items():
                registry: dict[str, Any] = getattr(self, kind)
                for item in items:
                    key = BY_KIND[kind].key(item)
                    registry[key] = item
                    self._owners[(kind, key)] = name
                    record.contributes.setdefault(kind, []).append(key)
                    if kind == "providers":
                        models = [m.id for m in safe_models(item)]
                        record.contributes.setdefault("models", []).extend(models)
                    if kind == "toolboxes":
                        for tool in item.tools:
                            self._owners[("tools", tool.name)] = name
                            record.contributes.setdefault("tools", []).append(tool.name)

    def _contributions_of(self, record: PluginRecord) -> dict[str, list[Any]] | None:
        """What one plugin's contribution hooks answer, by kind; ``None`` when it broke its
        contract (then it is dropped with the reason)."""
        others = [p for p in self.pm.get_plugins() if p is not record.plugin]
        contributions: dict[str, list[Any]] = {}
        for contribution in CONTRIBUTIONS:
            hook_name, kind = contribution.hook, contribution.kind
            if hook_name not in record.hooks:
                continue
            caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            try:
                answers = caller()
            except Exception as exc:
                self._drop(record, f"{hook_name}() raised {type(exc).__name__}: {exc}")
                return None
            problem, items = check_answers(hook_name, answers, contribution.item_type())
            if problem is not None:
                self._drop(record, problem)
                return None
            if not answers:
                record.warn(f"{hook_name}() returned None, expected a list (a missing return?)")
            if kind == "toolboxes":
                items = [without_broken_tools(record, box) for box in items]
            contributions.setdefault(kind, []).extend(items)
        return contributions

    def _find_clash(self, name: str, contributions: dict[str, list[Any]]) -> str | None:
        seen_here: set[tuple[str, str]] = set()
        for kind, items in contributions.items():
            keys: list[tuple[str, str]] = []
            for item in items:
                keys.append((kind, BY_KIND[kind].key(item)))
                if kind == "toolboxes":
                    keys.extend(("tools", t.name) for t in item.tools)
            for key in keys:
                owner = self._owners.get(key)
                what = SINGULAR.get(key[0], key[0])
                if owner is not None:
                    return f"{what} id {key[1]!r} is already registered by plugin {owner!r}"
                if key in seen_here:
                    return f"{what} id {key[1]!r} is registered twice by this plugin"
                seen_here.add(key)
        return None

    def _drop(self, record: PluginRecord, reason: str) -> None:
        log.warning("plugin %s left out: %s", record.name, reason)
        record.fail(reason)
        if record.plugin is not None and self.pm.is_registered(record.plugin):
            self.pm.unregister(record.plugin)

    # ---- queries ------------------------------------------------------------------------

    @property
    def failures(self) -> list[PluginRecord]:
        """Records of plugins that failed to load or broke their contract."""
        return [r for r in self.records.values() if r.status == "failed"]

    @property
    def warnings(self) -> list[tuple[str, str]]:
        """``(plugin, warning)`` for every plugin that loaded with a problem."""
        return [(r.name, w) for r in self.records.values() for w in r.warnings]

    def problems(self) -> list[str]:
        """Every failure and warning as ``plugin: reason`` (what strict mode refuses)."""
        lines = [f"{r.name}: {r.error}" for r in self.failures]
        return lines + [f"{name}: {warning}" for name, warning in self.warnings]

    def raise_on_failures(self) -> None:
        """Raise :class:`PluginError` naming every failed or warned plugin (strict mode)."""
        problems = self.problems()
        if problems:
            raise PluginError(f"plugin problems (NYLA_STRICT_PLUGINS): {'; '.join(problems)}")

    def failure_hint(self, kind: str) -> str:
        """For "unknown <kind>" errors: the plugins of that kind that failed to load, which
        might have contributed what was asked for ("" when none failed)."""
        group = f"nyla.{kind}"
        failed = [r for r in self.failures if r.group in (group, "explicit", BUILTIN_GROUP)]
        failed = failed or [r for r in self.failures if r.group in ENTRY_POINT_GROUPS]
        if not failed:
            return ""
        names = "; ".join(f"{r.name} ({r.error})" for r in failed)
        return f"; plugins that failed to load might have provided it: {names}"

    def add_cli_commands(self, group: Any) -> list[tuple[str, str]]:
        """Let every plugin add its subcommands to ``group`` (``nyla_cli_commands``, called
        through pluggy per plugin); ``(plugin, error)`` for each that raised."""
        errors = []
        hook_impls = self.pm.hook.nyla_cli_commands.get_hookimpls()
        for name in dict.fromkeys(impl.plugin_name for impl in hook_impls):
            plugin = self.pm.get_plugin(name)
            others = [p for p in self.pm.get_plugins() if p is not plugin]
            try:
                self.pm.subset_hook_caller("nyla_cli_commands", remove_plugins=others)(cli=group)
            except Exception as exc:  # a broken plugin command never breaks the CLI
                errors.append((name, f"{type(exc).__name__}: {exc}"))
        return errors

    def owner_of(self, kind: str, key: str) -> str | None:
        """Name of the plugin that contributed ``key`` of ``kind`` (``tools``, ``toolboxes``...)."""
        return self._owners.get((kind, key))

    def models(self) -> list[ModelSpec]:
        """Every model spec of every provider (each provider asked again only when a setting
        changed, see :class:`~nyla.plugin_answers.ModelCache`)."""
        return list(self.model_specs())

    def model_specs(self) -> tuple[ModelSpec, ...]:
        """:meth:`models` as a tuple, the same object while nothing it depends on changed."""
        return self._model_cache.specs(tuple(self.providers.values()))

    def tools(self) -> list[Tool]:
        """Every tool of every toolbox, each tagged with its toolbox id."""
        out: list[Tool] = []
        for toolbox in self.toolboxes.values():
            for tool in toolbox.tools:
                if tool.toolbox is None:
                    tool.toolbox = toolbox.id
                out.append(tool)
        return out
