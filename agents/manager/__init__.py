"""The medication manager: prescriptions read and checked, schedules, reminders and answers,
dose limits, follow-ups, and the daily report."""
