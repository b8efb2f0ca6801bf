"""The storage layer's tables that several services share: the knowledge store's rows (files,
chunks, connections, data sources, the audit) and the sync state. A service's own tables stay
in its folder (``<service>/tables.py``)."""
