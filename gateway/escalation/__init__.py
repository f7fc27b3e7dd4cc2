"""Prompts that must be answered ("are you OK?"): monitor events become questions
(from_alerts), the watcher asks and keeps each countdown (watcher), its prompts survive a
restart in safety.db (prompt_store), and the questions' words (words)."""

__all__ = ["from_alerts", "watcher"]
