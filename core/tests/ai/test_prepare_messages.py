"""The gate neutralizes and counts each message of a run once, whatever the history length."""

from __future__ import annotations

from nyla.agent.conversation import ConversationManager
from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.ai.tokens import REQUEST_OVERHEAD, count_message_tokens
from nyla.models.ai import Message, Role, ToolCall
from nyla.models.neutralize import Finding


class CountingNeutralizer:
    """Finds 'anna@example.ch' and counts every text it was asked to scan."""

    id = "counting"

    def __init__(self) -> None:
        self.scanned: list[str] = []

    def find(self, text: str) -> list[Finding]:
        self.scanned.append(text)
        value = "anna@example.ch"
        at = text.find(value)
        if at < 0:
            return []
        return [Finding(start=at, end=at + len(value), category="EMAIL", value=value)]


def _conversation(rounds: int) -> list[Message]:
    messages = [
        Message(role=Role.SYSTEM, content="system prompt"),
        Message(role=Role.USER, content="write to anna@example.ch"),
    ]
    for i in range(rounds):
        messages.append(
            Message(
                role=Role.ASSISTANT,
                tool_calls=[ToolCall(id=f"c{i}", name="send", arguments=f'{{"n": {i}}}')],
            )
        )
        messages.append(
            Message(role=Role.TOOL, content=f"sent {i} to anna@example.ch", tool_call_id=f"c{i}")
        )
    return messages


def test_each_message_is_scanned_once_across_growing_calls() -> None:
    neutralizer = CountingNeutralizer()
    session = NeutralizationSession()
    history = _conversation(30)
    for end in range(2, len(history) + 1):  # every call re-sends the whole history
        gate = NeutralizationGate([neutralizer])  # the service builds a gate per call
        out, tokens = gate.prepare_messages(history[:end], session)
        assert tokens + REQUEST_OVERHEAD == count_message_tokens(out)
    texts = [m.text for m in history if m.text] + [
        c.arguments for m in history for c in m.tool_calls
    ]
    assert sorted(neutralizer.scanned) == sorted(texts)  # no text scanned twice
    assert all("anna@example.ch" not in m.text for m in out)
    assert {m.text.split()[-1] for m in out if m.role is Role.TOOL} == {"[EMAIL_1]"}


def test_a_call_that_is_no_extension_reuses_what_it_can_and_stays_right() -> None:
    neutralizer = CountingNeutralizer()
    session = NeutralizationSession()
    history = _conversation(5)
    gate = NeutralizationGate([neutralizer])
    first, _ = gate.prepare_messages(history, session)
    scanned = len(neutralizer.scanned)
    knowledge = Message(role=Role.SYSTEM, content="context: anna@example.ch phones")
    mixed = [history[0], knowledge, *history[1:]]
    out, tokens = NeutralizationGate([neutralizer]).prepare_messages(mixed, session)
    assert len(neutralizer.scanned) == scanned + 1  # only the new block was scanned
    assert out[1].text == "context: [EMAIL_1] phones"
    assert [m.text for m in out[2:]] == [m.text for m in first[1:]]
    assert tokens + REQUEST_OVERHEAD == count_message_tokens(out)


def test_unchanged_messages_are_not_copied_and_inputs_are_not_touched() -> None:
    session = NeutralizationSession()
    history = _conversation(2)
    out, _ = NeutralizationGate([CountingNeutralizer()]).prepare_messages(history, session)
    assert out[0] is history[0]  # nothing personal: the message itself
    assert out[1] is not history[1] and history[1].text == "write to anna@example.ch"


def test_a_failing_neutralizer_result_is_never_reused() -> None:
    class Flaky:
        id = "flaky"
        calls = 0

        def find(self, text: str) -> list[Finding]:
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise RuntimeError("detector down")
            return []

    session = NeutralizationSession()
    history = [Message(role=Role.USER, content="hello")]
    gate = NeutralizationGate([Flaky()])
    gate.prepare_messages(history, session)
    assert gate.errors
    NeutralizationGate([Flaky()]).prepare_messages(history, session)
    assert Flaky.calls == 2  # the partial result was not kept: scanned again


def test_conversation_running_total_matches_a_recount() -> None:
    conversation = ConversationManager("system", "task")
    for message in _conversation(12)[2:]:
        conversation.add(message)
    conversation.knowledge_context = "some knowledge"

    def recount() -> int:
        return sum(conversation.count_tokens([m]) for m in conversation.for_call())

    assert conversation.tokens() == recount()
    block = conversation.for_call()[1]
    conversation.knowledge_context = "some knowledge"
    assert conversation.for_call()[1] is block  # same block: the next call extends the last
    conversation.knowledge_context = ""
    assert conversation.tokens() == recount()


class WordNeutralizer:
    """Finds its words (its setting) and counts the texts it scanned."""

    id = "words"

    def __init__(self, *words: str) -> None:
        self.words = words
        self.scanned: list[str] = []

    def find(self, text: str) -> list[Finding]:
        self.scanned.append(text)
        return [
            Finding(start=text.find(w), end=text.find(w) + len(w), category="NAME", value=w)
            for w in self.words
            if w in text
        ]


def test_the_memo_scans_again_for_another_input_detector_set_or_setting() -> None:
    """Within one run's session a text's result is kept only for the same text, the same
    neutralizers (objects, not only ids) and the same mapping; each change scans again."""
    session = NeutralizationSession()
    anna = WordNeutralizer("Anna")
    assert NeutralizationGate([anna]).apply("Anna asked", session) == "[NAME_1] asked"
    assert NeutralizationGate([anna]).apply("Anna asked", session) == "[NAME_1] asked"
    assert anna.scanned == ["Anna asked"]  # the same text, detectors and mapping: kept
    NeutralizationGate([anna]).apply("Bert asked", session)
    assert anna.scanned == ["Anna asked", "Bert asked"]  # another input

    # another detector set: one more neutralizer
    bert = WordNeutralizer("Bert")
    bert.id = "bert"
    assert NeutralizationGate([anna, bert]).apply("Bert asked", session) == "[NAME_2] asked"
    assert bert.scanned == ["Bert asked"]

    # the same id with another setting (a plugin built again): another neutralizer
    carla = WordNeutralizer("Carla")
    assert NeutralizationGate([carla]).apply("Carla and Anna", session) == "[NAME_3] and [NAME_1]"
    assert carla.scanned == ["Carla and Anna"]
    carla_and_dora = WordNeutralizer("Carla", "Dora")
    out = NeutralizationGate([carla_and_dora]).apply("Dora asked", session)
    assert out == "[NAME_4] asked" and carla_and_dora.scanned == ["Dora asked"]
    with_dora_only = WordNeutralizer("Dora")  # same id, other words, same text as before
    del carla_and_dora
    assert NeutralizationGate([with_dora_only]).apply("Dora asked", session) == "[NAME_4] asked"
    assert with_dora_only.scanned == ["Dora asked"]

    # neutralizing switched off (the service's setting gives no neutralizers): nothing kept
    assert NeutralizationGate([]).apply("Erin asked", session) == "Erin asked"
    erin = WordNeutralizer("Erin")
    assert NeutralizationGate([erin]).apply("Erin asked", session) == "[NAME_5] asked"


def test_an_extended_history_stays_right_for_edits_shorter_calls_and_failures() -> None:
    """A call that extends the last one grows the session's record of it in place: what a
    caller does with the returned list, a message replaced in the middle, a shorter call and
    a failing neutralizer on the added messages each still give the right result."""

    class Failing(CountingNeutralizer):
        fail = False

        def find(self, text: str) -> list[Finding]:
            if self.fail and "later" in text:
                raise RuntimeError("detector down")
            return super().find(text)

    neutralizer = Failing()
    session = NeutralizationSession()
    history = _conversation(3)
    first, _ = NeutralizationGate([neutralizer]).prepare_messages(history[:4], session)
    first.clear()  # the caller's list is its own
    out, tokens = NeutralizationGate([neutralizer]).prepare_messages(history, session)
    sent = [f"sent {i} to [EMAIL_1]" for i in range(3)]
    assert [m.text for m in out] == ["system prompt", "write to [EMAIL_1]"] + [
        text for i in range(3) for text in ("", sent[i])
    ]
    assert tokens + REQUEST_OVERHEAD == count_message_tokens(out)
    out.clear()  # the same for an extending call's list

    edited = list(history)
    edited[3] = Message(role=Role.TOOL, content="sent 0 to bob", tool_call_id="c0")
    out, tokens = NeutralizationGate([neutralizer]).prepare_messages(edited, session)
    assert out[3].text == "sent 0 to bob" and out[5].text == "sent 1 to [EMAIL_1]"
    assert tokens + REQUEST_OVERHEAD == count_message_tokens(out)

    scanned = len(neutralizer.scanned)
    short, _ = NeutralizationGate([neutralizer]).prepare_messages(history[:3], session)
    assert [m.text for m in short] == ["system prompt", "write to [EMAIL_1]", ""]
    assert len(neutralizer.scanned) == scanned  # nothing new to scan

    neutralizer.fail = True
    added = Message(role=Role.USER, content="later: anna@example.ch")
    gate = NeutralizationGate([neutralizer])
    out, _ = gate.prepare_messages([*edited, added], session)
    assert gate.errors and out[-1].text == "later: [EMAIL_1]"  # (a value the session knows)
    assert added.text not in neutralizer.scanned
    neutralizer.fail = False
    out, tokens = NeutralizationGate([neutralizer]).prepare_messages([*edited, added], session)
    assert out[-1].text == "later: [EMAIL_1]"
    assert neutralizer.scanned[-1] == added.text  # the failed result was not kept: scanned again
    assert tokens + REQUEST_OVERHEAD == count_message_tokens(out)


def test_a_gate_keeps_its_neutralizers_alive_with_every_session_it_served() -> None:
    """A session's memos name neutralizers by their object's id(), so each session a gate
    computed a result for keeps them alive (no other object can take that id meanwhile)."""
    import gc
    import weakref

    anna = WordNeutralizer("Anna")
    alive = weakref.ref(anna)
    first, second = NeutralizationSession(), NeutralizationSession()
    gate = NeutralizationGate([anna])
    assert gate.apply("Anna asked", first) == "[NAME_1] asked"
    assert gate.apply("Anna left", second) == "[NAME_1] left"
    del gate, anna, first
    gc.collect()
    assert alive() is not None  # pinned by the second session as well
    del second
    gc.collect()
    assert alive() is None
