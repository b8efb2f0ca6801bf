"""Workflow methods and their typed actions: the catalog, the executor, actions as tools."""
