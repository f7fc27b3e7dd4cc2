"""The HTTP API and the family console: small FastAPI route modules, token guards, the live
event feed."""
