"""Jobs that run on their day: the apscheduler job store in the gateway's own SQLite
(jobstore), follow-ups (follow_ups), and the one way the hub's own questions reach the
person (replies)."""

__all__ = ["follow_ups", "jobstore", "replies"]
