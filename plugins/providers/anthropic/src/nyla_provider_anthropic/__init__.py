"""Anthropic Claude models: messages API with tool use and streaming."""
