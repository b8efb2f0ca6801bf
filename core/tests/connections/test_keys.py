"""Where the token key comes from: the environment, a secrets file, or nyla's own key file
beside its configuration — never beside the database — with an older installation's key
moved out of the data directory without making a single stored token unreadable."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from nyla.config import reload
from nyla.connections.crypto import TokenCipher
from nyla.connections.keys import default_key_file, legacy_key_file, load_keys
from nyla.errors import ConfigurationError


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(config dir, data dir), both empty; no key configured."""
    config, data = tmp_path / "config", tmp_path / "data"
    monkeypatch.setenv("NYLA_CONFIG", str(config / "config.toml"))
    monkeypatch.setenv("NYLA_HOME", str(data))
    monkeypatch.delenv("NYLA_SECRET_KEY", raising=False)
    monkeypatch.delenv("NYLA_SECRET_KEY_FILE", raising=False)
    reload()
    yield config, data
    reload()


def _key() -> str:
    return Fernet.generate_key().decode()


def test_the_key_from_the_environment_wins(dirs, monkeypatch, tmp_path) -> None:
    new, old = _key(), _key()
    secret = tmp_path / "secret"
    secret.write_text(_key())
    monkeypatch.setenv("NYLA_SECRET_KEY", f"{new}, {old}")
    monkeypatch.setenv("NYLA_SECRET_KEY_FILE", str(secret))
    source = load_keys()
    assert source.keys == [new.encode(), old.encode()] and source.origin == "NYLA_SECRET_KEY"
    token = TokenCipher([old]).encrypt("refresh-1")
    assert TokenCipher.from_config().decrypt(token) == "refresh-1"  # the old key still reads
    assert not default_key_file().exists() and not legacy_key_file().exists()


def test_a_secrets_file_supplies_the_key(dirs, monkeypatch, tmp_path) -> None:
    first, second = _key(), _key()
    secret = tmp_path / "run" / "secrets" / "nyla_secret_key"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"{first}\n{second}\n")
    secret.chmod(0o600)
    monkeypatch.setenv("NYLA_SECRET_KEY_FILE", str(secret))
    assert load_keys().keys == [first.encode(), second.encode()]
    cipher = TokenCipher.from_config()
    assert TokenCipher([first]).decrypt(cipher.encrypt("x")) == "x"
    assert not default_key_file().exists(), "a configured key makes no key file"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("NYLA_SECRET_KEY", "not-a-key", "NYLA_SECRET_KEY is not a valid Fernet key"),
        ("NYLA_SECRET_KEY", "{good},short", "key 2 of NYLA_SECRET_KEY is not a valid"),
        ("NYLA_SECRET_KEY_FILE", "file:hunter2-not-a-key", "is not a valid Fernet key"),
        ("NYLA_SECRET_KEY_FILE", "file:", "holds no encryption key"),
        ("NYLA_SECRET_KEY_FILE", "missing", "does not exist"),
    ],
)
def test_a_malformed_key_is_a_clear_error_that_never_shows_the_key(
    dirs, monkeypatch, tmp_path, variable, value, message
) -> None:
    value = value.replace("{good}", _key())
    if variable == "NYLA_SECRET_KEY_FILE":
        path = tmp_path / "key.txt"
        if value.startswith("file:"):
            path.write_text(value.removeprefix("file:"))
        monkeypatch.setenv(variable, str(path))
    else:
        monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=message) as caught:
        TokenCipher.from_config()
    assert "hunter2" not in str(caught.value) and "short" not in str(caught.value)
    assert not default_key_file().exists(), "a bad configured key never falls back to a new one"


def test_without_configuration_a_key_is_made_beside_the_config_not_the_data(dirs) -> None:
    config, data = dirs
    cipher = TokenCipher.from_config()
    made = config / "secret.key"
    assert made.exists() and not (data / "secret.key").exists()
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert TokenCipher.from_config().decrypt(cipher.encrypt("x")) == "x", "made once, then kept"


def test_an_older_installation_s_key_is_moved_out_of_the_data_directory(dirs, caplog) -> None:
    config, data = dirs
    old_key = _key()
    data.mkdir(parents=True)
    (data / "secret.key").write_text(old_key)
    os.chmod(data / "secret.key", 0o600)
    stored = TokenCipher([old_key]).encrypt("refresh-1")  # a token the old install saved
    with caplog.at_level(logging.WARNING, logger="nyla.connections.keys"):
        cipher = TokenCipher.from_config()
    assert cipher.decrypt(stored) == "refresh-1"
    assert (config / "secret.key").read_text().strip() == old_key
    assert not (data / "secret.key").exists()
    assert "moved the key file" in caplog.text


def test_two_different_keys_are_both_kept(dirs) -> None:
    config, data = dirs
    new_key, old_key = _key(), _key()
    config.mkdir(parents=True)
    (config / "secret.key").write_text(new_key)
    data.mkdir(parents=True)
    (data / "secret.key").write_text(old_key)
    for path in (config / "secret.key", data / "secret.key"):
        path.chmod(0o600)
    stored = TokenCipher([old_key]).encrypt("refresh-1")
    cipher = TokenCipher.from_config()
    assert cipher.decrypt(stored) == "refresh-1"
    assert TokenCipher([new_key]).decrypt(cipher.encrypt("y")) == "y", "the new key encrypts"
    assert (data / "secret.key").exists(), "a key nothing else holds is never removed"


def test_a_key_that_cannot_be_moved_stays_in_use(dirs, monkeypatch, tmp_path) -> None:
    _, data = dirs
    old_key = _key()
    data.mkdir(parents=True)
    (data / "secret.key").write_text(old_key)
    (data / "secret.key").chmod(0o600)
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")  # the configuration directory cannot be made (even as root)
    monkeypatch.setenv("NYLA_CONFIG", str(blocked / "config.toml"))
    reload()
    stored = TokenCipher([old_key]).encrypt("refresh-1")
    assert TokenCipher.from_config().decrypt(stored) == "refresh-1"
    assert (data / "secret.key").exists()


def test_a_key_file_others_can_read_is_reported(dirs, monkeypatch, tmp_path, caplog) -> None:
    secret = tmp_path / "key"
    secret.write_text(_key())
    secret.chmod(0o644)
    monkeypatch.setenv("NYLA_SECRET_KEY_FILE", str(secret))
    with caplog.at_level(logging.WARNING, logger="nyla.connections.keys"):
        load_keys()
    assert "readable by other users" in caplog.text
