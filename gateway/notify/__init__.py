"""Notifications: the durable, idempotent text queue and its dispatcher, the Twilio sender
(or the offline outbox), delivery reports and acknowledgements."""
