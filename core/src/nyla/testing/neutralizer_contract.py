"""Contract suite for neutralizer plugins: findings are exact spans, the AI service's gate
removes every sample value with stable placeholders, and clean text passes unchanged."""

from __future__ import annotations

from typing import Any

from nyla.testing.contract_base import PluginContract, _host_for


class NeutralizerContract(PluginContract):
    """Contract for neutralizer plugins: findings are exact spans of the input."""

    #: texts with personal data the neutralizer must find (override)
    positive_samples: tuple[str, ...] = ()
    #: texts without personal data it must leave alone (override)
    negative_samples: tuple[str, ...] = ("The quarterly report is due on Friday.",)

    def _gate(self, plugin: Any) -> Any:
        from nyla.ai.neutralize import NeutralizationGate

        host = _host_for(plugin)
        assert host.neutralizers, "no neutralizer registered"
        return NeutralizationGate(list(host.neutralizers.values()), require=True)

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

    def test_gate_removes_every_finding_with_stable_placeholders(self, plugin: Any) -> None:
        from nyla.ai.neutralize import NeutralizationSession

        gate = self._gate(plugin)
        session = NeutralizationSession()
        for text in self.positive_samples:
            values = {f.value for f in gate.findings(text)}
            once = gate.apply(text, session)
            for value in values:
                assert value not in once, f"{value!r} survived neutralization"
            assert gate.apply(text, session) == once, "placeholders are not stable"
            assert session.restore(once) == text

    def test_gate_leaves_negative_samples_unchanged(self, plugin: Any) -> None:
        from nyla.ai.neutralize import NeutralizationSession

        gate = self._gate(plugin)
        for text in self.negative_samples:
            assert gate.apply(text, NeutralizationSession()) == text
