"""nyla-toolbox-media: images and speech as agent tools, through the AI service."""

from __future__ import annotations

from nyla.sdk import Toolbox, hookimpl
from nyla_toolbox_media.speech import speech_tools
from nyla_toolbox_media.vision import vision_tools

__all__ = ["media_toolbox", "nyla_toolboxes"]


def media_toolbox() -> Toolbox:
    """The ``media`` toolbox."""
    return Toolbox(
        id="media",
        label="Images and speech",
        description="Describe images; turn text into speech and speech into text.",
        tools=[*vision_tools(), *speech_tools()],
        default_active=True,
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The media toolbox."""
    return [media_toolbox()]
