"""How service-access rules decide (no database): the most specific rule wins, the role's
default decides without one, a connector's rule beats the rule on every connector."""

from __future__ import annotations

import pytest

from nyla.access.permissions import (
    AGENT,
    CONNECTOR,
    KNOWLEDGE,
    Grants,
    Rule,
    ServiceAccessDenied,
    Subject,
    connector,
    parse_permission,
    parse_role,
)

BOB = Subject("bob", "m1", "user")


def grants(*rules: tuple[str, str, str, bool], subject: Subject = BOB) -> Grants:
    return Grants(subject, tuple(Rule(k, s, p, a) for k, s, p, a in rules))  # type: ignore[arg-type]


def test_defaults_let_every_role_and_the_cli_use_every_service():
    for role in ("user", "mandateAdmin", "sysadmin", None):
        g = grants(subject=Subject("x", None, role))
        assert all(g.allows(p) for p in (AGENT, KNOWLEDGE, CONNECTOR, connector("msft")))


def test_user_beats_mandate_beats_role_and_exact_beats_parent():
    g = grants(("role", "user", KNOWLEDGE, False))
    assert not g.allows(KNOWLEDGE) and g.allows(AGENT)
    g = grants(("role", "user", KNOWLEDGE, False), ("mandate", "m1", KNOWLEDGE, True))
    assert g.allows(KNOWLEDGE)
    g = grants(("mandate", "m1", AGENT, False), ("user", "bob", AGENT, True))
    assert g.allows(AGENT)
    g = grants(("mandate", "m1", AGENT, True), ("user", "bob", AGENT, False))
    assert not g.allows(AGENT)
    # every connector revoked, one granted back; at the same level the exact rule wins
    g = grants(("user", "bob", CONNECTOR, False), ("user", "bob", connector("msft"), True))
    assert g.allows(connector("msft")) and not g.allows(connector("google"))
    assert g.denied([AGENT, connector("msft"), connector("jira")]) == [connector("jira")]


def test_refusal_names_the_permission_and_how_to_grant_it():
    g = grants(("user", "bob", connector("jira"), False))
    with pytest.raises(ServiceAccessDenied) as caught:
        g.check(connector("jira"))
    assert caught.value.permission == "service.connector.jira"
    assert "nyla access grant service.connector.jira --user bob" in str(caught.value)
    assert "jira connector" in str(caught.value)


def test_parse_permission_and_role():
    assert parse_permission("agent") == AGENT
    assert parse_permission(" Service.Connector.MSFT ") == "service.connector.msft"
    assert parse_permission("connector") == CONNECTOR
    for bad in ("", "service.admin", "service.connector.", "service.connector.a b", "x.y"):
        with pytest.raises(ValueError, match="unknown permission"):
            parse_permission(bad)
    assert parse_role("mandate-admin") == "mandateAdmin" and parse_role("SYSADMIN") == "sysadmin"
    with pytest.raises(ValueError):
        parse_role("root")
