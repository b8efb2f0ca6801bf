"""The agent: ReAct loop, tool registry and dispatch, toolboxes, conversation manager, events
and the persisted trace. Entry points: ``kernel.agent.run(...)`` (:class:`AgentRuntime`) and
:func:`nyla.agent.loop.run_agent_loop` (the bare loop over an explicit tool list)."""
