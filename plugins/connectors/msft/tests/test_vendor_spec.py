"""Graph's metadata as the check of every exchange: OData options name only the type's own
properties, ``$select`` limits the answer, delta items may carry ``@removed``."""

from __future__ import annotations

import httpx

from .graph_wire import GRAPH, graph_spec, sample

MESSAGES = f"{GRAPH}/me/mailFolders/inbox/messages"


def check(url: str, body: dict) -> list[str]:
    return graph_spec().check(httpx.Request("GET", url), httpx.Response(200, json=body))


def test_a_documented_listing_passes():
    assert check(f"{MESSAGES}?$top=10&$orderby=receivedDateTime desc", {"value": []}) == []
    assert (
        check(f"{MESSAGES}/delta", {"value": [{"id": "1", "@removed": {"reason": "deleted"}}]})
        == []
    )


def test_options_naming_properties_the_type_lacks_are_caught():
    [problem] = check(f"{MESSAGES}?$select=id,subject,mood", {"value": []})
    assert "$select" in problem and "'mood'" in problem
    [problem] = check(f"{MESSAGES}?$orderby=arrivedDateTime desc", {"value": []})
    assert "$orderby" in problem


def test_an_answer_outside_select_and_an_invented_annotation_are_caught():
    message = sample("message")
    [problem] = check(f"{MESSAGES}?$select=id,subject", {"value": [message]})[:1]
    assert "is answered but not in $select" in problem
    [problem] = check(MESSAGES, {"value": [{"id": "1", "@odata.score": "3"}]})
    assert "'@odata.score' was unexpected" in problem
