"""One default identity: ``NYLA_USER`` from the environment, else nyla's config file, else
``local`` — what every command and ``nyla tokens create`` act as."""

from __future__ import annotations

import pytest

from nyla import config
from nyla.identity import default_user


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    monkeypatch.setenv("NYLA_CONFIG", str(path))
    monkeypatch.delenv("NYLA_USER", raising=False)
    config.reload()
    yield path
    config.reload()


def test_the_default_is_local(config_file):
    assert default_user() == "local"


def test_the_config_file_names_the_user(config_file, monkeypatch):
    config_file.write_text('[env]\nNYLA_USER = "fiona"\n', encoding="utf-8")
    config.reload()
    assert default_user() == "fiona"
    monkeypatch.setenv("NYLA_USER", "  gabriel ")  # the environment wins, trimmed
    assert default_user() == "gabriel"
    monkeypatch.setenv("NYLA_USER", "")  # empty counts as unset
    assert default_user() == "fiona"
