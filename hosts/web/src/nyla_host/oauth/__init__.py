"""nyla as its own OAuth authorization server for the MCP endpoint (the MCP specification's
authorization: RFC 9728 protected-resource metadata, RFC 8414 server metadata, RFC 7591
dynamic client registration, the authorization code grant with PKCE S256, RFC 8707 resource
indicators, refresh tokens with rotation and RFC 7009 revocation).

An access token is a nyla API token bound to the MCP endpoint's URL (its audience): it is
listed and revoked like any other token, and good for ``/mcp`` only."""
