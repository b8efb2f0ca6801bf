"""Typed contracts (pydantic models and protocols) shared by the kernel and plugins."""
