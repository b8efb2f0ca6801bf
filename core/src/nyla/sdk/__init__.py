"""The stable surface for plugin authors. Plugins import ``nyla``, ``nyla.sdk`` (and its
modules) and ``nyla.testing``, nothing else of the kernel.

- :mod:`nyla.sdk.connectors`: the connector protocol, the normalised item model, the vendor
  HTTP layer and its typed errors.
"""
