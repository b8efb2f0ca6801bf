"""``AiService.embed_rows``: the embedding round memory stores as float4. A provider offering
``embed_float32`` hands its vectors as float32 bytes (one ``array('f')`` per text, no Python
float per value); any other provider's go as ``embed`` gives them. Either way the texts pass
the same gate, are counted, priced and billed the same, and a broken answer is the
provider's error."""

from __future__ import annotations

import struct
from array import array
from typing import Any

import pytest

from nyla.ai.retry import RetryPolicy
from nyla.errors import ProviderError
from nyla.models.ai import Usage
from nyla.models.neutralize import Finding
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

TEXTS = ["read_a: read 1 ok", "mail bob@example.com now", "a longer text " * 20]


class Sleeps:
    async def __call__(self, seconds: float) -> None:
        pass


def service(kernel: Any) -> Any:
    from nyla.ai.service import AiService

    return AiService(kernel.plugins, kernel.settings.get("ai"), retry=RetryPolicy(sleep=Sleeps()))


def vectors(texts: list[str]) -> list[list[float]]:
    """Doubles that float4 rounds (1/3, 0.1, ...), a few per text."""
    return [[len(t) / 3, 0.1 * i, -1 / (i + 7), 1e-3 * len(t)] for i, t in enumerate(texts)]


class Float32Provider(ScriptedProvider):
    """Embeds as ``vectors`` does, through ``embed`` as lists and ``embed_float32`` as the
    same values in float32; ``answer`` replaces the float32 answer when set."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(lambda r, i: "", id="f", embed_fn=vectors, **kw)
        self.seen: list[list[str]] = []
        self.answer: Any = None

    async def embed_float32(self, model: str, texts: list[str]) -> Any:
        self.seen.append(list(texts))
        if self.answer is not None:
            return self.answer
        flat = [x for v in vectors(texts) for x in v]
        # the usage the scripted embed reports
        return array("f", flat).tobytes(), 4, Usage(input_tokens=sum(map(len, texts)) // 4)


class EmailFinder:
    id = "email"

    def find(self, text: str) -> list[Finding]:
        at = text.find("bob@example.com")
        if at < 0:
            return []
        return [Finding(start=at, end=at + 15, category="EMAIL", value="bob@example.com")]


class Neutralizers:
    from nyla.hookspecs import hookimpl

    @hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [EmailFinder()]


def float4(vector: Any) -> bytes:
    return struct.pack(f">{len(vector)}f", *vector)


async def test_float32_rows_are_the_lists_vectors_as_float4_with_the_same_cost(
    make_kernel,
) -> None:
    provider = Float32Provider()
    provider.spec.capabilities.max_batch_size = 2
    ai = service(make_kernel(ScriptedPlugin(provider), Neutralizers(), builtins=False))
    listed = await ai.embed(TEXTS)
    before = ai.totals()
    calls, tokens, cost = before.calls, before.input_tokens, before.cost_chf
    model, rows = await ai.embed_rows(TEXTS)
    after = ai.totals()
    assert model == listed.model == "f:model"
    assert all(type(r) is array and r.typecode == "f" for r in rows)
    assert [float4(r) for r in rows] == [float4(v) for v in listed.vectors]
    assert (after.calls - calls, after.input_tokens - tokens) == (1, listed.usage.input_tokens)
    assert after.cost_chf - cost == pytest.approx(listed.cost_chf)
    # batched as the model asks, every text through the gate
    assert [len(b) for b in provider.seen] == [2, 1]
    assert "bob@example.com" not in provider.seen[0][1]


async def test_a_provider_without_float32_gives_its_lists(make_kernel) -> None:
    provider = ScriptedProvider(lambda r, i: "", id="e", embed_fn=vectors)
    ai = service(make_kernel(ScriptedPlugin(provider), builtins=False))
    model, rows = await ai.embed_rows(TEXTS)
    assert model == "e:model"
    assert rows == (await ai.embed(TEXTS)).vectors
    assert all(type(r) is list for r in rows)
    assert await ai.embed_rows([]) == ("e:model", [])


@pytest.mark.parametrize(
    "answer",
    [
        (b"\0" * 12, 4, Usage()),  # a value short of three texts' vectors
        (b"\0" * 46, 4, Usage()),  # not whole float32 values
        ([0.0] * 12, 4, Usage()),  # not bytes
        (b"\0" * 48, 0, Usage()),  # no dimension
        (b"\0" * 48, 4, None),  # no usage
        (b"\0" * 48, 4),  # not three parts
    ],
)
async def test_a_broken_float32_answer_is_the_providers_error(make_kernel, answer) -> None:
    provider = Float32Provider()
    provider.answer = answer
    ai = service(make_kernel(ScriptedPlugin(provider), builtins=False))
    with pytest.raises(ProviderError):
        await ai.embed_rows(TEXTS)
