"""Policy resolver (longest prefix), RAG limits semantics, settings validation, cost estimate."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nyla.knowledge.cost import estimate_cost
from nyla.knowledge.limits import (
    CLICKUP_LIMITS_DEFAULT,
    FILES_LIMITS_DEFAULT,
    SettingsValidationError,
    get_rag_limits,
    get_stored_overrides,
    kind_for_service,
    merge_settings_patch,
)
from nyla.knowledge.policy import covers, effective_policy


def ds(id, path, **fields):
    base = {"rag_index_enabled": None, "neutralize": None, "scope": None}
    return SimpleNamespace(id=id, path=path, **{**base, **fields})


TREE = [
    ds("root", "/", rag_index_enabled=True, scope="mandate"),
    ds("hr", "/Shared/HR", rag_index_enabled=False, neutralize=True),
    ds("hr-public", "/Shared/HR/Public", rag_index_enabled=True),
    ds("hr2", "/Shared/HR2"),  # sets nothing: inherits from root
]


@pytest.mark.parametrize(
    ("path", "field", "value", "source"),
    [
        ("/Shared/HR/salaries.xlsx", "rag_index_enabled", False, "hr"),
        ("/Shared/HR/Public/handbook.pdf", "rag_index_enabled", True, "hr-public"),
        ("/Shared/HR/Public/handbook.pdf", "neutralize", True, "hr"),
        ("/Shared/HR2/x.txt", "rag_index_enabled", True, "root"),  # /Shared/HR is no prefix
        ("/Shared/HR", "rag_index_enabled", False, "hr"),
        ("/Other/file.txt", "scope", "mandate", "root"),
        ("/Other/file.txt", "neutralize", False, None),  # nobody sets it: the default
    ],
)
def test_longest_prefix(path, field, value, source):
    resolved = effective_policy(TREE, path, field)
    assert resolved.value == value
    assert resolved.source_id == source


def test_prefix_matches_whole_segments_only():
    assert covers("/a/b", "/a/b/c") and covers("/a/b/", "a/b") and covers("/", "/x")
    assert not covers("/a/b", "/a/bc") and not covers("/a/b/c", "/a/b")
    with pytest.raises(ValueError):
        effective_policy(TREE, "/x", "ragLimits")


def test_stored_overrides_are_only_what_is_set_and_limits_merge_on_defaults():
    source = {"settings": {"ragLimits": {"maxItems": 10, "maxTasks": 5, "bogus": 1}}}
    assert get_stored_overrides(source, "files") == {"max_items": 10}
    assert get_stored_overrides(source, "clickup") == {"max_tasks": 5}
    assert get_rag_limits(source, "files") == {**FILES_LIMITS_DEFAULT, "max_items": 10}
    assert get_rag_limits({"settings": None}, "clickup") == CLICKUP_LIMITS_DEFAULT
    # a walker merges the overrides onto its caller's limits: the caller's value survives
    # where nothing is stored, and no default sneaks in
    caller = {"max_items": 3, "max_depth": 2}
    assert {**caller, **get_stored_overrides(source, "files")} == {"max_items": 10, "max_depth": 2}


def test_no_inheritance_for_limits():
    parent = {"settings": {"ragLimits": {"maxBytes": 1000}}}
    child = {"settings": {}}
    del parent
    assert get_stored_overrides(child, "files") == {}
    assert get_rag_limits(child, "files") == FILES_LIMITS_DEFAULT


def test_settings_patch_accepts_only_rag_limits():
    merged = merge_settings_patch(
        {"ragLimits": {"maxItems": 5}}, {"ragLimits": {"max_depth": 3}}, "files"
    )
    assert merged == {"ragLimits": {"maxItems": 5, "maxDepth": 3}}
    removed = merge_settings_patch(merged, {"ragLimits": {"maxItems": None}}, "files")
    assert removed == {"ragLimits": {"maxDepth": 3}}
    with pytest.raises(SettingsValidationError, match=r"unknown settings key.*neutralize"):
        merge_settings_patch({}, {"ragLimits": {}, "neutralize": True}, "files")
    with pytest.raises(SettingsValidationError, match="unknown files limit 'maxTasks'"):
        merge_settings_patch({}, {"ragLimits": {"maxTasks": 1}}, "files")
    with pytest.raises(SettingsValidationError, match="positive integer"):
        merge_settings_patch({}, {"ragLimits": {"maxItems": -1}}, "files")
    with pytest.raises(SettingsValidationError, match="positive integer"):
        merge_settings_patch({}, {"ragLimits": {"maxItems": True}}, "files")
    with pytest.raises(SettingsValidationError, match="object"):
        merge_settings_patch({}, {"ragLimits": 5}, "files")
    assert kind_for_service("ClickUp") == "clickup" and kind_for_service("msft") == "files"


def test_cost_estimate_arithmetic():
    source = {"settings": {"ragLimits": {"maxBytes": 100_000_000}}}
    est = estimate_cost(source, "files", source_id="ds1")
    # 100 MB x 0.4 extractable / 4 bytes per token = 10M tokens; x 0.02 CHF / 1M = 0.2 CHF
    assert est.estimated_tokens == 10_000_000
    assert est.estimated_chf == pytest.approx(0.2)
    assert est.basis.assumptions["bytesPerToken"] == 4
    assert est.basis.assumptions["extractableFraction"] == 0.4
    assert est.basis.limits["max_bytes"] == 100_000_000
    wire = est.to_wire()
    assert set(wire) == {"estimatedTokens", "estimatedChf", "basis", "sourceId"}
    priced = estimate_cost(
        source,
        "files",
        source_id="ds1",
        price_chf_per_mtok=0.13,
        price_model="openai:text-embedding-3-large",
    )
    assert priced.estimated_chf == pytest.approx(1.3)
    clickup = estimate_cost(
        {"settings": {"ragLimits": {"maxTasks": 100}}}, "clickup", source_id="c"
    )
    assert clickup.estimated_tokens == int(100 * 2048 * 0.4 / 4)
