"""Contract suite for neutralizer plugins: findings are exact spans, the AI service's gate
removes every sample value with stable placeholders, and clean text passes unchanged."""

from __future__ import annotations

from typing import Any

from nyla.testing.contract_base import PluginContract, owned


class NeutralizerContract(PluginContract):
    """Contract for neutralizer plugins: findings are exact spans of the input.

    ``positive_samples`` (texts with personal data) must be given: a suite without them
    would assert nothing about what the neutralizer finds, so it fails instead.
    """

    #: texts with personal data the neutralizer must find (override; required)
    positive_samples: tuple[str, ...] = ()
    #: texts without personal data it must leave alone (override)
    negative_samples: tuple[str, ...] = ("The quarterly report is due on Friday.",)

    def _neutralizers(self, plugin: Any) -> list[Any]:
        found = list(owned(plugin, "neutralizers").values())
        assert found, "the plugin registers no neutralizer (nyla_neutralizers), or it clashed"
        return found

    def _positives(self) -> tuple[str, ...]:
        assert self.positive_samples, (
            f"{type(self).__name__}: set positive_samples (texts with personal data the "
            "neutralizer must find); without them this suite checks nothing"
        )
        return self.positive_samples

    def _gate(self, plugin: Any) -> Any:
        from nyla.ai.neutralize import NeutralizationGate

        return NeutralizationGate(self._neutralizers(plugin), require=True)

    def test_samples_are_given(self) -> None:
        positives = self._positives()
        assert self.negative_samples, f"{type(self).__name__}: negative_samples is empty"
        both = set(positives) & set(self.negative_samples)
        assert not both, f"samples listed as both positive and negative: {sorted(both)}"

    def test_findings_are_exact_spans(self, plugin: Any) -> None:
        for neutralizer in self._neutralizers(plugin):
            for text in self._positives():
                findings = neutralizer.find(text)
                assert findings, f"{neutralizer.id} found nothing in {text!r}"
                for f in findings:
                    assert text[f.start : f.end] == f.value, (
                        f"{neutralizer.id}: finding {f.value!r} is not the text at "
                        f"[{f.start}:{f.end}] ({text[f.start : f.end]!r}) of {text!r}"
                    )

    def test_negative_samples_untouched(self, plugin: Any) -> None:
        for neutralizer in self._neutralizers(plugin):
            for text in self.negative_samples:
                found = neutralizer.find(text)
                assert found == [], f"{neutralizer.id} found {found} in clean text {text!r}"

    def test_gate_removes_every_finding_with_stable_placeholders(self, plugin: Any) -> None:
        from nyla.ai.neutralize import NeutralizationSession

        gate = self._gate(plugin)
        session = NeutralizationSession()
        for text in self._positives():
            values = {f.value for f in gate.findings(text)}
            assert values, f"the gate found nothing in {text!r}"
            once = gate.apply(text, session)
            for value in values:
                assert value not in once, f"{value!r} survived neutralization: {once!r}"
            again = gate.apply(text, session)
            assert again == once, f"placeholders are not stable: {once!r} then {again!r}"
            restored = session.restore(once)
            assert restored == text, f"restoring {once!r} gave {restored!r}, not {text!r}"

    def test_gate_leaves_negative_samples_unchanged(self, plugin: Any) -> None:
        from nyla.ai.neutralize import NeutralizationSession

        gate = self._gate(plugin)
        for text in self.negative_samples:
            out = gate.apply(text, NeutralizationSession())
            assert out == text, f"the gate changed clean text {text!r} into {out!r}"
