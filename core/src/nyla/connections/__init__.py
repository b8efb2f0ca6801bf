"""Connections to the user's external services: the connection store, encrypted tokens, the
token manager (refresh under a PostgreSQL advisory lock per credential) and the one vendor HTTP
layer every connector goes through."""
