"""A database an older nyla made, without the conversation columns (a workflow's title and
activity time, a message's run id and citations), gets them added in place at start: its
workflows and messages stay, and conversations work on it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from sqlalchemy import text

from nyla.db import Database
from nyla.files.bridge import WorkflowStore
from nyla.models.agent import RunContext

pytestmark = pytest.mark.db


async def test_an_older_chat_schema_gets_the_conversation_columns(embedded_pg):
    db = Database(embedded_pg, schema="t_conversation_probe")
    try:
        await db.ensure_ready()
        async with db.engine.begin() as conn:
            for statement in (
                "ALTER TABLE chat_workflows DROP COLUMN title, DROP COLUMN updated_at",
                "ALTER TABLE chat_messages DROP COLUMN run_id, DROP COLUMN citations",
                "INSERT INTO chat_workflows (id, user_id, current_round) VALUES ('old', 'ann', 0)",
                "INSERT INTO chat_messages (id, workflow_id, seq, role, status, message, "
                "round_number) VALUES ('m1', 'old', 1, 'assistant', 'step', 'made a file', 0)",
            ):
                await conn.execute(text(statement))
        await db.dispose()

        again = Database(embedded_pg, schema="t_conversation_probe")
        await again.ensure_ready()
        store = WorkflowStore(SimpleNamespace(db=again))
        context = RunContext(user_id="ann")
        old = await store.load("old", context)
        assert [m.message for m in old.messages] == ["made a file"]
        assert old.messages[0].run_id is None and old.messages[0].citations is None
        # an untitled workflow (a tool's, the CLI's) is no conversation
        assert await store.list_conversations("ann") == []
        created = await store.create_conversation(context, prompt="Where is my file?")
        workflow = await store.load(created.id, context)
        await store.add_turn(
            workflow,
            role="assistant",
            status="answer",
            text="Here.",
            run_id="r1",
            citations=[{"title": "a.txt"}],
        )
        listed = await store.list_conversations("ann")
        assert [(c.title, c.message_count) for c in listed] == [("Where is my file?", 1)]
        await again.dispose()
    finally:
        await db.drop_schema()
        await db.dispose()
