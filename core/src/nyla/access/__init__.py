"""Service access: who may use the agent, the knowledge store and each connector.

:mod:`nyla.access.permissions` names the permissions and decides with a set of rules;
:mod:`nyla.access.service` stores the rules (``kernel.service_access``) and is asked by the
CLI, the host and, through :mod:`nyla.access.run`, the agent's tool registry.
"""
