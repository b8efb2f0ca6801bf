"""The plugin host's registries are typed by the hookspecs: one per contribution hook (every
hook that returns ``list[X]``), each checking answers against that ``X``."""

from __future__ import annotations

import inspect

from nyla import hookspecs
from nyla.models.actions import Method
from nyla.models.ai import Provider
from nyla.models.datasource import ConnectorAdapter, Walker
from nyla.models.feature import Feature
from nyla.models.neutralize import Neutralizer
from nyla.models.settings_sections import SettingsSection
from nyla.models.tools import Toolbox
from nyla.plugin_answers import CONTRIBUTIONS, PROVIDERS
from nyla.plugins import PluginHost
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider


def test_every_hookspec_returning_a_list_has_a_registry() -> None:
    listed = {
        name
        for name, spec in inspect.getmembers(hookspecs, inspect.isfunction)
        if name.startswith("nyla_") and str(spec.__annotations__["return"]).startswith("list[")
    }
    assert {c.hook for c in CONTRIBUTIONS} == listed
    host = PluginHost()
    for contribution in CONTRIBUTIONS:
        assert getattr(host, contribution.kind) == {}, contribution.kind


def test_item_types_are_read_from_the_return_annotations() -> None:
    assert {c.kind: c.item_type() for c in CONTRIBUTIONS} == {
        "providers": Provider,
        "toolboxes": Toolbox,
        "connectors": ConnectorAdapter,
        "walkers": Walker,
        "features": Feature,
        "neutralizers": Neutralizer,
        "methods": Method,
        "settings_sections": SettingsSection,
    }


def test_an_answer_of_another_type_is_refused_by_the_annotated_type() -> None:
    class WrongProviders:
        @hookspecs.hookimpl
        def nyla_providers(self) -> list[object]:
            return [object()]

    host = PluginHost.from_plugins([WrongProviders()], names=["wrong"])
    assert host.providers == {}
    assert host.records["wrong"].error == "nyla_providers() returned object, expected Provider"


def test_a_registered_item_is_found_under_its_id() -> None:
    provider = ScriptedProvider(lambda request, index: "ok")
    host = PluginHost.from_plugins([ScriptedPlugin(provider)], names=["scripted"])
    assert host.providers == {PROVIDERS.key(provider): provider}
    assert host.owner_of("providers", PROVIDERS.key(provider)) == "scripted"
