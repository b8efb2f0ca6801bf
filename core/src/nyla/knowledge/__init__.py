"""The knowledge store (RAG): extraction, chunking, indexing, scoped semantic search on
pgvector, agent context, round/workflow memory, consent and purge, policy resolver, RAG limits,
cost estimate and inventory. The entry point is ``kernel.knowledge``
(:class:`nyla.knowledge.service.KnowledgeService`)."""
