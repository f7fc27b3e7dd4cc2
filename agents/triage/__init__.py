"""Symptom triage: lay wording to condition to specialty, red flags first (a crisis or an
emergency ends a booking), from a knowledge base and a small classifier."""
