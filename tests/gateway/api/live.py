"""The real app behind a real uvicorn on a free port (in a thread), for what only a real
server shows: the WebSocket handshake headers and a truly chunked request body."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

from tests.brokers import free_port


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Yields "127.0.0.1:port" once the server listens."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, name="api-under-test", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
