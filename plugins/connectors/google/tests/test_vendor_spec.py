"""Google's partial answers: a request naming ``fields`` gets only those fields, from the
fakes and in the check of every exchange."""

from __future__ import annotations

import httpx

from nyla.testing.spec_select import keep_selected, parse_google_fields

from .google_wire import google_spec

FILES = "https://www.googleapis.com/drive/v3/files"


def test_the_fields_syntax_nests_and_slashes():
    tree = parse_google_fields("nextPageToken,files(id,owners(displayName)),user/emailAddress")
    assert tree == {
        "nextPageToken": None,
        "files": {"id": None, "owners": {"displayName": None}},
        "user": {"emailAddress": None},
    }
    body = {"files": [{"id": "1", "name": "a", "owners": [{"displayName": "A", "me": True}]}]}
    assert keep_selected(body, tree) == {"files": [{"id": "1", "owners": [{"displayName": "A"}]}]}


def test_an_answer_with_fields_not_asked_for_is_caught():
    request = httpx.Request("GET", f"{FILES}?fields=files(id)")
    answer = httpx.Response(200, json={"files": [{"id": "1", "name": "a.txt"}]})
    [problem] = google_spec("drive-v3").check(request, answer)
    assert "'files[0].name' is answered but not in fields" in problem


def test_an_undocumented_parameter_and_an_invented_field_are_caught():
    request = httpx.Request("GET", f"{FILES}?orderBy=name&sortBy=name")
    answer = httpx.Response(200, json={"files": [{"id": "1", "score": 3}]})
    problems = google_spec("drive-v3").check(request, answer)
    assert any("'sortBy' is not documented" in p for p in problems)
    assert any("'score' was unexpected" in p for p in problems)
