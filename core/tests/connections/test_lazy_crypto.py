"""The token cipher's library is imported when tokens are sealed or read, not with the
connections: a sync of a local folder (no token) is spared it (~10 MiB resident)."""

from __future__ import annotations

import subprocess
import sys

from cryptography.fernet import Fernet

from nyla.connections.crypto import TokenCipher


def test_the_connections_load_without_the_cipher_library() -> None:
    code = (
        "import sys\n"
        "import nyla.connections.service, nyla.connections.store, nyla.connections.keys\n"
        "print('cryptography' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "False"


def test_the_cipher_still_seals_and_reads_tokens() -> None:
    cipher = TokenCipher([Fernet.generate_key()])
    assert cipher.decrypt(cipher.encrypt("token")) == "token"
    assert len(TokenCipher.generate_key()) == 44
