"""generateImage through the AI service, at the HTTP wire of OpenAI's Images API (the
provider plugin of this workspace over a fake shaped like its documented response): the
prompt is neutralized before it leaves, the image is saved as a PNG file, its price charged,
and answers without image data or without an image model fail clearly."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from nyla.sdk import RunContext
from nyla.testing import call_tool, plugin_kernel
from nyla.testing.provider_wire import sdk_transport
from nyla.testing.scripted import ScriptedPlugin

from . import makers
from .conftest import USER


class Images:
    """``POST /v1/images/generations`` answering ``{"created", "data": [{"b64_json"}]}``."""

    def __init__(self, data: list[dict[str, str]]) -> None:
        self.data = data
        self.bodies: list[dict[str, object]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/images/generations"
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"created": 1_764_000_000, "data": self.data})


def _kernel(db, handler):
    import nyla_provider_openai  # the test's provider; the toolbox never imports it
    import nyla_toolbox_documents

    provider = nyla_provider_openai.OpenAIProvider(
        api_key="sk-test", transport=sdk_transport(handler)
    )
    return plugin_kernel(nyla_toolbox_documents, ScriptedPlugin(provider), db=db, builtins=True)


async def test_images_are_saved_and_charged(db):
    wire = Images([{"b64_json": base64.b64encode(makers.png(16, 16)).decode()}])
    kernel = _kernel(db, wire)
    got = await call_tool(
        kernel,
        "generateImage",
        {"prompt": "a poster for ada@example.com", "n": 2, "size": "1024x1536", "name": "poster"},
        user=USER,
    )
    assert got.success, got.error
    assert [f["name"] for f in got.data["files"]] == ["poster-1.png", "poster-2.png"]
    saved = await kernel.files.read_bytes(got.data["files"][0]["fileId"], RunContext(user_id=USER))
    assert saved == makers.png(16, 16)
    assert len(wire.bodies) == 2 and wire.bodies[0]["size"] == "1024x1536"
    assert "ada@example.com" not in wire.bodies[0]["prompt"]
    assert kernel.ai.totals().cost_chf > 0


@pytest.mark.parametrize("data", [[{"url": "https://images.example/1.png"}], []])
async def test_an_answer_without_image_data_fails(db, data):
    kernel = _kernel(db, Images(data))
    got = await call_tool(kernel, "generateImage", {"prompt": "a cat"}, user=USER)
    assert not got.success and "no image data" in got.error


async def test_without_an_image_model_the_tool_says_so(kernel):
    got = await call_tool(kernel, "generateImage", {"prompt": "a cat"}, user=USER)
    assert not got.success and got.error_details.code == "NOT_AVAILABLE"
