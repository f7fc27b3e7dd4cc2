"""The appointment assistant: the on-device planner/caller that books a specialist.

- runner: one conversation, policy -> (model wording) -> tool -> observation, until <END>;
- planner/: the control flow (code, not the model) and the one tool allowed at each step;
- caller: the exact parameters of the tool the planner named; model_roles: what the local
  model does in each role; language: the deterministic questions and answers;
- conversations, conversation_store, chat_router, run_state, memory: open conversations,
  kept across restarts, and the chat in front of them;
- schedule: free times and the brief's time format; trajectory: the brief's trajectory format;
- process/: the assistant in its own process (a crash there never takes the gateway down).
"""

__all__ = ["conversations", "process", "runner"]
