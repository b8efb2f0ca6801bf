"""The provider contract for the local provider (no HTTP API: the embedder runs in-process)."""

from __future__ import annotations

from typing import Any

import pytest

import nyla_provider_local
from nyla.testing.provider_contract import ProviderContract
from nyla_provider_local import LocalProvider


class TestLocalContract(ProviderContract):
    supports_chat = False
    supports_tools = False
    supports_streaming = False
    supports_embeddings = True
    has_wire = False
    embedding_model = "local:hash-384"

    @pytest.fixture
    def plugin(self) -> Any:
        return nyla_provider_local

    @pytest.fixture
    def wire(self) -> LocalProvider:
        return LocalProvider()
