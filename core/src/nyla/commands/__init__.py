"""Kernel CLI commands: the plugin inspector, catalogs (models, toolboxes, tools), db."""
