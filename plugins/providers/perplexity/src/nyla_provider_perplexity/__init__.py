"""Perplexity sonar models for research, with citations."""
