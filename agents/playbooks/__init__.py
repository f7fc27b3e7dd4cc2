"""SOS playbooks: deterministic hard and soft SOS runs, journaled so a restart resumes them,
and the escalation ladder. They never wait on the LLM."""
