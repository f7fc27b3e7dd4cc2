"""The medication manager: prescriptions read (prescription, rx_*, prescription_model) and
confirmed (rx_confirm), dose limits across products (dose_limits, drugs, ingredients,
intakes), reminders (reminders) run as a service (service), and what the family is told
(family_alerts)."""

__all__ = ["prescription", "service"]
