"""Every RAG limit is a whole number in a documented range (issue 27: ``maxBytes: 1e23`` was
accepted); values an older nyla stored beyond it are read as the range's end."""

from __future__ import annotations

import pytest

from nyla.knowledge.limits import (
    DEFAULTS,
    LIMIT_MODELS,
    SettingsValidationError,
    get_rag_limits,
    limit_ranges,
    merge_settings_patch,
)


@pytest.mark.parametrize("kind", sorted(DEFAULTS))
def test_every_limit_field_is_a_bounded_int_and_its_default_lies_inside(kind):
    model = LIMIT_MODELS[kind]
    ranges = limit_ranges(kind)
    assert set(ranges) == {model.model_fields[name].alias for name in DEFAULTS[kind]}
    for name, default in DEFAULTS[kind].items():
        field = model.model_fields[name]
        assert field.annotation is int and field.description, name
        low, high = ranges[field.alias]["min"], ranges[field.alias]["max"]
        assert 1 == low <= default <= high < 2**62, (name, low, default, high)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (10**23, "at most"),
        (1e23, "whole number"),
        (float("inf"), "whole number"),
        (5.0, "whole number"),
        ("5", "whole number"),
        (True, "whole number"),
        (0, "at least 1"),
        (-1, "positive integer"),
        ([], "whole number"),
    ],
)
def test_a_limit_out_of_range_or_not_an_int_is_refused_by_name(value, says):
    with pytest.raises(SettingsValidationError, match=says) as caught:
        merge_settings_patch({}, {"ragLimits": {"maxBytes": value}}, "files")
    assert "'maxBytes'" in str(caught.value)


def test_the_range_ends_are_accepted_and_old_values_beyond_them_are_read_as_the_end():
    high = limit_ranges("clickup")["maxTasks"]["max"]
    merged = merge_settings_patch(
        {}, {"ragLimits": {"maxTasks": high, "maxWorkspaces": 1}}, "clickup"
    )
    assert merged["ragLimits"] == {"maxTasks": high, "maxWorkspaces": 1}
    stored = {"settings": {"ragLimits": {"maxBytes": 10**23, "maxItems": 1e23, "maxDepth": 3}}}
    limits = get_rag_limits(stored, "files")
    assert limits["max_bytes"] == limit_ranges("files")["maxBytes"]["max"]
    assert limits["max_items"] == DEFAULTS["files"]["max_items"]  # not a whole number: ignored
    assert limits["max_depth"] == 3
