"""Assembly: the one place gateway/ meets agents/.

- hub: builds the gateway with the agents side handed in at construction, serves the API,
  runs until a signal;
- agents: `build_agents`, the agents side for one gateway (the ports it calls, the parts it runs);
- agent_parts: those parts (ladder, SOS playbooks, assistant, medication, reports), each
  with start()/stop().
"""

__all__ = ["agents", "hub"]
