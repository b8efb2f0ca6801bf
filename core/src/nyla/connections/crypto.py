"""Tokens at rest: encrypted with Fernet (AES-128-CBC + HMAC-SHA256, ``cryptography``).

The keys come from :mod:`nyla.connections.keys`: ``NYLA_SECRET_KEY`` (the key itself),
else ``NYLA_SECRET_KEY_FILE`` (a secrets file), else a key file nyla makes once beside its
configuration — never beside the database. One or more keys: the first encrypts, all
decrypt (key rotation).
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Protocol

from nyla.connections.keys import KEY_FILE_SETTING, KEY_SETTING, load_keys
from nyla.errors import ConfigurationError


class Cipher(Protocol):
    """What seals the tokens at rest: a :class:`TokenCipher`, or one made on first use."""

    def encrypt(self, value: str) -> str: ...

    def decrypt(self, value: str) -> str: ...


class TokenCipher:
    """Encrypts and decrypts token strings with the configured Fernet keys."""

    def __init__(self, keys: list[str | bytes]) -> None:
        # imported when tokens are sealed or read, not with the connections: a command that
        # needs none (a local folder's sync) is spared the library (~10 MiB resident)
        from cryptography.fernet import Fernet, MultiFernet

        if not keys:
            raise ConfigurationError(f"no encryption key: set {KEY_SETTING}")
        try:
            self._fernet = MultiFernet([Fernet(k) for k in keys])
            self._primary = keys[0] if isinstance(keys[0], bytes) else keys[0].encode("ascii")
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(
                f"{KEY_SETTING} is not a valid Fernet key (32 url-safe base64 bytes; "
                "make one with `python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'`)"
            ) from exc

    @classmethod
    def from_config(cls, data_dir: Path | None = None) -> TokenCipher:
        """Keys from ``NYLA_SECRET_KEY``, else ``NYLA_SECRET_KEY_FILE``, else nyla's own key
        file (an older one in ``data_dir`` is moved out of it; see
        :func:`~nyla.connections.keys.load_keys`)."""
        return cls(list(load_keys(data_dir).keys))

    @staticmethod
    def generate_key() -> str:
        """A new random key (for ``NYLA_SECRET_KEY``)."""
        from cryptography.fernet import Fernet

        return Fernet.generate_key().decode()

    def derive_key(self, purpose: str) -> bytes:
        """A key of its own for ``purpose`` (an HMAC-SHA256 of the purpose under the
        encrypting key): what is signed with it never exposes or reuses that key."""
        return hmac.new(self._primary, b"nyla-derived:" + purpose.encode(), hashlib.sha256).digest()

    def encrypt(self, value: str) -> str:
        """The ciphertext of ``value`` (url-safe text)."""
        return self._fernet.encrypt(value.encode("utf-8")).decode("ascii")

    def decrypt(self, value: str) -> str:
        """The plain text of a stored token; a clear error when the key does not fit."""
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(value.encode("ascii")).decode("utf-8")
        except InvalidToken as exc:
            raise ConfigurationError(
                f"stored tokens cannot be decrypted with the configured key ({KEY_SETTING} or "
                f"{KEY_FILE_SETTING} changed?): add the old key after the new one, or connect "
                "again"
            ) from exc
