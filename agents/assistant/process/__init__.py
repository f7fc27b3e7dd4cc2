"""The assistant in its own process: the child that runs conversations, the proxy the
gateway talks to, and the messages between them (a crash there never takes the gateway down)."""

__all__ = ["proxy"]
