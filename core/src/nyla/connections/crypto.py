"""Tokens at rest: encrypted with Fernet (AES-128-CBC + HMAC-SHA256, ``cryptography``).

The key comes from the setting ``NYLA_SECRET_KEY`` (environment or config file): one or more
Fernet keys separated by commas, the first encrypts and all decrypt (key rotation). Without
it, a key is generated once into ``<data dir>/secret.key`` (mode 0600), so a local install
works out of the box; a server sets the variable.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from nyla.ai.config import config_value
from nyla.errors import ConfigurationError

KEY_SETTING = "NYLA_SECRET_KEY"


class TokenCipher:
    """Encrypts and decrypts token strings with the configured Fernet keys."""

    def __init__(self, keys: list[str | bytes]) -> None:
        if not keys:
            raise ConfigurationError(f"no encryption key: set {KEY_SETTING}")
        try:
            self._fernet = MultiFernet([Fernet(k) for k in keys])
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(
                f"{KEY_SETTING} is not a valid Fernet key (32 url-safe base64 bytes; "
                "make one with `python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'`)"
            ) from exc

    @classmethod
    def from_config(cls, data_dir: Path | None = None) -> TokenCipher:
        """Keys from ``NYLA_SECRET_KEY``, else the key file in the data directory (created
        on first use)."""
        configured = config_value(KEY_SETTING)
        if configured:
            return cls([k.strip() for k in configured.split(",") if k.strip()])
        from nyla.embedded import default_data_dir

        path = (data_dir or default_data_dir()) / "secret.key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(Fernet.generate_key())
        return cls([path.read_bytes().strip()])

    @staticmethod
    def generate_key() -> str:
        """A new random key (for ``NYLA_SECRET_KEY``)."""
        return Fernet.generate_key().decode()

    def encrypt(self, value: str) -> str:
        """The ciphertext of ``value`` (url-safe text)."""
        return self._fernet.encrypt(value.encode("utf-8")).decode("ascii")

    def decrypt(self, value: str) -> str:
        """The plain text of a stored token; a clear error when the key does not fit."""
        try:
            return self._fernet.decrypt(value.encode("ascii")).decode("utf-8")
        except InvalidToken as exc:
            raise ConfigurationError(
                f"stored tokens cannot be decrypted with the configured key ({KEY_SETTING} "
                "changed?): add the old key after the new one, or connect again"
            ) from exc
