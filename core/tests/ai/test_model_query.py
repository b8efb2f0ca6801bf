"""The model selector's one argument: a query built from a call's context."""

from __future__ import annotations

from nyla.models.agent import RunContext
from nyla.models.ai import OperationType
from nyla.models.model_query import ModelQuery


def test_a_query_carries_the_context_s_restriction_but_embeddings_ignore_the_allow_list():
    context = RunContext(allowed_providers=["local"], allowed_models=["local:a", "local:b"])
    agent = ModelQuery.for_call("agent", context, needs_tools=True, limit=2)
    assert agent.operation is OperationType.AGENT
    assert agent.allowed_providers == ("local",)
    assert agent.allowed_models == ("local:a", "local:b")
    assert agent.needs_tools and agent.limit == 2
    embedding = ModelQuery.for_call(OperationType.EMBEDDING, context)
    assert embedding.allowed_providers == ("local",) and embedding.allowed_models is None
    free = ModelQuery.for_call("agent")
    assert free.allowed_providers is None and free.allowed_models is None


def test_queries_that_rank_alike_share_a_ranking_key():
    wide = ModelQuery.for_call("agent", estimated_tokens=100_000, model="a:x", limit=1)
    narrow = ModelQuery.for_call("agent", estimated_tokens=10)
    assert wide.ranking_key() == narrow.ranking_key()
    assert ModelQuery.for_call("agent", needs=("json_mode",)).ranking_key() != (
        narrow.ranking_key()
    )
