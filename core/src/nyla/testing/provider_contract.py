"""Contract suite for model provider plugins.

A provider's test module subclasses :class:`ProviderContract`, overrides the ``plugin``
fixture (the plugin module) and, for the wire tests, the ``wire`` fixture: a
:class:`ProviderWire` that builds the provider over an ``httpx.MockTransport`` and shapes
answers as the vendor's public API documents them. Every wire test runs the real provider
code (its SDK or httpx client) through the real AI service, so conversion, error mapping,
retries, fallback and cost are tested together.

Which tests apply follows from what the plugin's models declare (``ModelSpec.operation_types``
and ``ModelSpec.capabilities``), never from a switch: a ``supports_*`` attribute a suite sets
must agree with the declarations, or the suite fails (so a declared capability cannot be
skipped). The guard in :class:`~nyla.testing.contract_base.ContractSuite` forbids deleting or
overriding a contract test without an ``xfail`` reason.

The suite is assembled from one module per concern: :mod:`~nyla.testing.provider_base`
(capabilities, fixtures, helpers, discovery), :mod:`~nyla.testing.provider_chat` (chat,
tools, streaming, images), :mod:`~nyla.testing.provider_options` (``tool_choice``, stop
sequences, JSON answers), :mod:`~nyla.testing.provider_failures` (errors, retries,
fallback, embeddings, web search) and :mod:`~nyla.testing.provider_wire` (the vendor fakes).
"""

from __future__ import annotations

from nyla.testing.provider_base import (
    ANSWER_OPTIONS,
    CAPABILITIES,
    ProviderContractBase,
    declared_capabilities,
)
from nyla.testing.provider_chat import ChatTests
from nyla.testing.provider_failures import FailureTests
from nyla.testing.provider_options import AnswerOptionTests
from nyla.testing.provider_wire import (
    Handler,
    OpenAIWire,
    ProviderWire,
    Recorder,
    fake_vector,
    sdk_transport,
    sse_response,
)

__all__ = [
    "ANSWER_OPTIONS",
    "CAPABILITIES",
    "Handler",
    "OpenAIWire",
    "ProviderContract",
    "ProviderContractBase",
    "ProviderWire",
    "Recorder",
    "declared_capabilities",
    "fake_vector",
    "sdk_transport",
    "sse_response",
]


class ProviderContract(ChatTests, AnswerOptionTests, FailureTests):
    """Contract for model provider plugins. Override ``plugin`` and, for the wire tests,
    ``wire`` (a :class:`ProviderWire`)."""
