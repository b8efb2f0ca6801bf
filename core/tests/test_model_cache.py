"""A provider's model specs are built once and asked again only when a setting changed: every
model call selects from them, and building them cost more than the rest of a loop round."""

from __future__ import annotations

from typing import Any

from nyla import config
from nyla.ai.scripted import ScriptedPlugin, ScriptedProvider
from nyla.kernel import Kernel
from nyla.models.ai import AiCallRequest, Message, OperationType, Role
from nyla.plugins import PluginHost


class CountingProvider(ScriptedProvider):
    """The scripted model, counting how often its specs are built."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(lambda request, index: "ok", **kw)
        self.listed = 0
        self.fail = False

    def models(self) -> list[Any]:
        self.listed += 1
        if self.fail:
            raise RuntimeError("catalog down")
        return super().models()


def test_specs_are_built_once_until_a_setting_changes(monkeypatch) -> None:
    provider = CountingProvider()
    host = PluginHost.from_plugins([ScriptedPlugin(provider)])
    base = provider.listed  # registration lists the plugin's models once
    first = host.models()
    for _ in range(5):
        assert [m.id for m in host.models()] == [m.id for m in first]
    assert provider.listed == base + 1
    monkeypatch.setenv("NYLA_TEST_SOME_KEY", "set")  # e.g. an API key set at run time
    host.models()
    assert provider.listed == base + 2
    monkeypatch.delenv("NYLA_TEST_SOME_KEY")
    host.models()
    assert provider.listed == base + 3
    config.reload()  # the config file may have changed
    host.models()
    host.models()
    assert provider.listed == base + 4


def test_a_provider_can_opt_out_and_a_failure_is_not_kept() -> None:
    live = CountingProvider(id="live")
    live.models_cacheable = False  # type: ignore[attr-defined]
    flaky = CountingProvider(id="flaky")
    host = PluginHost.from_plugins([ScriptedPlugin(live, flaky)])
    base = live.listed
    host.models()
    host.models()
    assert live.listed == base + 2
    flaky.fail = True
    flaky_ids = {"flaky:model"}
    host._model_cache = type(host._model_cache)()  # start over with the failing catalog
    assert not flaky_ids & {m.id for m in host.models()}
    flaky.fail = False
    assert flaky_ids & {m.id for m in host.models()}  # asked again, not stuck empty


async def test_model_calls_do_not_rebuild_the_specs() -> None:
    provider = CountingProvider()
    # no database here: governance (model access, billing) would read the default one
    plugins = PluginHost.from_plugins([ScriptedPlugin(provider)])
    kernel = Kernel(plugins=plugins, settings={"governance": False})
    base = provider.listed
    request = AiCallRequest(
        operation=OperationType.AGENT, messages=[Message(role=Role.USER, content="hi")]
    )
    for _ in range(4):
        assert (await kernel.ai.call(request)).content == "ok"
    assert provider.listed == base + 1


def test_the_selection_follows_the_window_and_changed_specs(monkeypatch) -> None:
    small = ScriptedProvider(lambda r, i: "", id="small")
    small.spec.quality_rank, small.spec.context_window = 99, 1_000
    large = ScriptedProvider(lambda r, i: "", id="large")
    kernel = Kernel(plugins=PluginHost.from_plugins([ScriptedPlugin(small, large)]))
    select = kernel.ai.select_model
    assert select("agent").id == "small:model"
    assert select("agent", estimated_tokens=5_000).id == "large:model"  # window: every call
    assert select("agent").id == "small:model"
    replaced = small.spec.model_copy(update={"available": False})
    monkeypatch.setattr(small, "spec", replaced)
    monkeypatch.setenv("NYLA_TEST_RELISTED", "1")  # a setting changed: specs listed again
    assert select("agent").id == "large:model"


def test_the_settings_fingerprint_sees_every_kind_of_environment_change(monkeypatch) -> None:
    from nyla.config import reload, settings_fingerprint

    before = settings_fingerprint()
    assert settings_fingerprint() == before
    monkeypatch.setenv("NYLA_FINGERPRINT_PROBE", "1")
    added = settings_fingerprint()
    assert added != before and settings_fingerprint() == added
    monkeypatch.setenv("NYLA_FINGERPRINT_PROBE", "2")
    changed = settings_fingerprint()
    assert changed != added
    monkeypatch.delenv("NYLA_FINGERPRINT_PROBE")
    assert settings_fingerprint() != changed
    last = settings_fingerprint()
    reload()
    assert settings_fingerprint() != last
