"""Contract suite for neutralizer plugins."""

from __future__ import annotations

from typing import Any

from nyla.testing.contract_base import PluginContract, _host_for


class NeutralizerContract(PluginContract):
    """Contract for neutralizer plugins: findings are exact spans of the input."""

    #: texts with personal data the neutralizer must find (override)
    positive_samples: tuple[str, ...] = ()
    #: texts without personal data it must leave alone (override)
    negative_samples: tuple[str, ...] = ("The quarterly report is due on Friday.",)

    def test_findings_are_exact_spans(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.neutralizers, "no neutralizer registered"
        for neutralizer in host.neutralizers.values():
            for text in self.positive_samples:
                findings = neutralizer.find(text)
                assert findings, f"{neutralizer.id} found nothing in {text!r}"
                for f in findings:
                    assert text[f.start : f.end] == f.value

    def test_negative_samples_untouched(self, plugin: Any) -> None:
        host = _host_for(plugin)
        for neutralizer in host.neutralizers.values():
            for text in self.negative_samples:
                assert neutralizer.find(text) == []
