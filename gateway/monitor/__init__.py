"""The health monitor: per reading, context, plausibility, confirmation, scores and the alert
decision; events that say why and who must be told (engine.py is the facade)."""
