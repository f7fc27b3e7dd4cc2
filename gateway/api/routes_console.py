"""The web console's files: a page, a script and a style sheet from gateway/api/console/.

Plain files, no build step. The page signs in with a token kept in sessionStorage and then
talks to the same REST API and /v1/live as any client, so every refusal is the API's own.
The Content-Security-Policy allows scripts and styles from this origin only (no inline
script, no eval), which is what keeps an injected name or message from running as code."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import Response

router = APIRouter(include_in_schema=False)

CONSOLE_DIR = Path(__file__).resolve().parent / "console"
# Only these files are served, by name: nothing else in the folder is reachable.
FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "cards.js": "text/javascript; charset=utf-8",
    "chart.js": "text/javascript; charset=utf-8",
    "chat.js": "text/javascript; charset=utf-8",
    "person.js": "text/javascript; charset=utf-8",
    "report.js": "text/javascript; charset=utf-8",
    "sim.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",  # revalidate: a hub update must not leave an old script
}


def _file(name: str, media_type: str) -> Response:
    return Response((CONSOLE_DIR / name).read_bytes(), media_type=media_type, headers=HEADERS)


@router.get("/")
def index() -> Response:
    return _file("index.html", "text/html; charset=utf-8")


@router.get("/console/{name}")
def asset(name: str) -> Response:
    media_type = FILES.get(name)
    if media_type is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
    return _file(name, media_type)
