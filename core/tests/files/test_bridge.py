"""The file bridge (seed 003): FileItem -> ChatDocument in a ChatMessage of the workflow,
both references in the result text, and the tolerant document-reference parser."""

from __future__ import annotations

import pytest

from nyla.errors import FileAccessError
from nyla.files.bridge import (
    attach_file_as_chat_document,
    format_tool_file_result,
    resolve_documents,
)
from nyla.files.docrefs import DocumentReferenceError, coerce_document_reference_list
from nyla.files.store import FileStore
from nyla.models.agent import RunContext

ANNA = RunContext(user_id="anna", workflow_id="wf-1")


@pytest.fixture
def store(db) -> FileStore:
    return FileStore(db)


@pytest.mark.parametrize(
    "value",
    [
        ["docItem:abc", "docItem:def"],
        [{"id": "abc", "name": "a.txt"}, {"id": "def"}],
        {"documents": [{"id": "abc"}, {"id": "docItem:def"}]},
    ],
)
def test_the_list_shapes_normalize_to_doc_items(value):
    refs = coerce_document_reference_list(value)
    assert [str(r) for r in refs] == ["docItem:abc", "docItem:def"]


def test_a_single_string_and_doc_list_labels():
    assert [str(r) for r in coerce_document_reference_list("docItem:abc")] == ["docItem:abc"]
    refs = coerce_document_reference_list(["docList:writeFile:report"])
    assert (refs[0].kind, refs[0].value) == ("docList", "writeFile:report")


@pytest.mark.parametrize(
    "value",
    [42, "abc", ["file:abc"], [{"name": "no id"}], {"docs": []}, [["docItem:a"]], None],
)
def test_other_shapes_are_rejected_with_the_accepted_ones_named(value):
    with pytest.raises(DocumentReferenceError, match="accepted shapes"):
        coerce_document_reference_list(value)


async def test_attach_without_workflow_returns_none_and_keeps_the_file(store):
    item = await store.save("a.txt", b"a", ANNA)
    assert await attach_file_as_chat_document(store.workflows, None, item) is None
    text = format_tool_file_result("Created", item, None)
    assert "docItem:" not in text and f"file id: {item.id}" in text


async def test_attach_binds_a_document_in_a_message_memory_and_database(store):
    workflow = await store.workflows.load("wf-1", ANNA)
    assert workflow.messages == []
    item = await store.save("report.md", b"# Q3", ANNA)
    doc_id = await attach_file_as_chat_document(
        store.workflows, workflow, item, label="writeFile:report.md"
    )
    assert doc_id is not None
    # in memory at once (same run)
    assert [d.id for d in workflow.documents()] == [doc_id]
    message = workflow.messages[0]
    assert message.role == "assistant" and message.documents_label.startswith("writeFile:")
    # and persisted (a later run)
    reloaded = await store.workflows.load("wf-1", ANNA)
    assert [(d.id, d.file_id) for d in reloaded.documents()] == [(doc_id, item.id)]
    text = format_tool_file_result("Created", item, doc_id)
    assert text.splitlines()[1:] == [
        f"  documentList ref: docItem:{doc_id}",
        f"  file id: {item.id}",
    ]
    found, missing = resolve_documents(reloaded, [{"id": doc_id}, "docItem:nope"])
    assert [d.file_id for d in found] == [item.id] and missing == ["docItem:nope"]
    by_label, _ = resolve_documents(reloaded, "docList:writeFile:report.md")
    assert [d.id for d in by_label] == [doc_id]


async def test_another_users_workflow_is_not_reachable(store):
    await store.workflows.load("wf-private", ANNA)
    with pytest.raises(FileAccessError):
        await store.workflows.load("wf-private", RunContext(user_id="bruno"))


async def test_a_failing_store_returns_none_instead_of_raising(store):
    workflow = await store.workflows.load("wf-2", ANNA)
    item = await store.save("a.txt", b"a", ANNA)
    ghost = item.model_copy(update={"id": "not-a-stored-file"})  # violates the foreign key
    assert await attach_file_as_chat_document(store.workflows, workflow, ghost) is None
    assert workflow.messages == []  # memory untouched when the database refused
