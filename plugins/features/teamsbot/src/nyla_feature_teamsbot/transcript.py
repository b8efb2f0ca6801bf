"""The transcript as the feature data agent sees it (a description only: the SQLAlchemy table
is in :mod:`nyla_feature_teamsbot.tables`, loaded on first use, so discovering the plugin
loads no database layer)."""

from __future__ import annotations

from nyla.sdk import FeatureField, FeatureTable

TRANSCRIPT = FeatureTable(
    name="teamsbot_messages",
    description="What was said in the Teams chats, channels and meeting chats the bot serves: "
    "one row per message, to the bot (direction 'in') or from it ('out').",
    fields=[
        FeatureField(
            name="conversation_id",
            type="string",
            description="Teams conversation id",
            nullable=False,
        ),
        FeatureField(name="direction", type="string", description="'in' or 'out'", nullable=False),
        FeatureField(
            name="source",
            type="string",
            description="'user', 'fastPath', 'agent' or 'director'",
            nullable=False,
        ),
        FeatureField(name="sender_name", type="string", description="who wrote it"),
        FeatureField(name="text", type="string", description="the message", nullable=False),
        FeatureField(name="sent_at", type="datetime", description="when", nullable=False),
    ],
)
