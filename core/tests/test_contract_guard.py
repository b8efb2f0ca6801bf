"""The contract suites' guard: a plugin cannot silently delete or override a contract test."""

from __future__ import annotations

import pytest

from nyla.testing import NeutralizerContract


class Kept(NeutralizerContract):
    pass


class Overridden(NeutralizerContract):
    def test_negative_samples_untouched(self, plugin):  # silently weakened
        pass


class Deleted(NeutralizerContract):
    test_findings_are_exact_spans = None


class XfailedWithReason(NeutralizerContract):
    @pytest.mark.xfail(reason="detector is knowingly broad on this sample")
    def test_negative_samples_untouched(self, plugin):
        raise AssertionError


class XfailedWithoutReason(NeutralizerContract):
    @pytest.mark.xfail
    def test_negative_samples_untouched(self, plugin):
        raise AssertionError


def test_unchanged_suite_passes_the_guard():
    Kept().test_contract_tests_not_overridden()


def test_xfail_with_reason_is_allowed():
    XfailedWithReason().test_contract_tests_not_overridden()


@pytest.mark.parametrize(
    ("suite", "message"),
    [
        (Overridden, "test_negative_samples_untouched is overridden"),
        (Deleted, "test_findings_are_exact_spans was deleted"),
        (XfailedWithoutReason, "test_negative_samples_untouched is overridden"),
    ],
)
def test_guard_catches_changes(suite, message):
    with pytest.raises(AssertionError, match=message):
        suite().test_contract_tests_not_overridden()
