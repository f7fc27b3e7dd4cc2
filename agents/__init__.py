"""The agent side: SOS playbooks, the on-device planner/caller (assistant, triage, local
model), the medication manager and the typed, audited tools they act through. Never imported
by gateway/; healthgw/assembly/hub.py connects the two."""
