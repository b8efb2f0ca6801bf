"""The Teams bot: nyla's agent in Microsoft Teams chats, channels and meeting chats, over the
Bot Framework activity protocol (see docs/teams.md)."""

from __future__ import annotations

from nyla.sdk import Feature, hookimpl
from nyla_feature_teamsbot.feature import TeamsBotFeature

__all__ = ["TeamsBotFeature", "nyla_features"]


@hookimpl
def nyla_features() -> list[Feature]:
    """The Teams bot feature."""
    return [TeamsBotFeature()]
