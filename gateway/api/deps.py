"""API dependencies: the backend the routes read from, and token auth (admin / family)."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from gateway.household import Household
from gateway.metrics import LatencyHistogram
from gateway.ports import LadderPort, MedicationPort, ReportPort

Role = Literal["admin", "family"]


class Backend(Protocol):
    """What the API needs from the running gateway (gateway.app.Gateway provides it)."""

    household: Household
    meds: MedicationPort | None
    reports: ReportPort | None
    ladder: LadderPort | None
    reading_latency: LatencyHistogram
    sos_latency: LatencyHistogram
    tool_metrics: Callable[[], Mapping[str, Mapping[str, float]]] | None

    def ready(self) -> Mapping[str, bool]: ...
    def assess(self, body: Mapping[str, Any]) -> dict[str, Any]: ...
    def person_view(self, person_id: str) -> dict[str, Any]: ...
    def device_views(self) -> list[dict[str, Any]]: ...
    def events(
        self,
        *,
        person: str | None,
        types: Sequence[str] | None,
        since: float | None,
        until: float | None,
        limit: int,
    ) -> list[dict[str, Any]]: ...
    def readings(
        self, person: str, *, since: float | None, until: float | None, limit: int
    ) -> list[dict[str, Any]]: ...
    def trajectories(
        self, *, person: str | None, category: str | None, limit: int
    ) -> list[dict[str, Any]]: ...
    def trajectory(self, run_id: str) -> dict[str, Any] | None: ...
    async def sos_start(self, person: str) -> bool: ...
    async def chat_say(self, person: str, text: str, session_id: str | None) -> str | None: ...
    def chat_listen(
        self, person: str, fn: Callable[[dict[str, Any]], None]
    ) -> Callable[[], None] | None: ...
    def chat_open(self, session_id: str) -> bool: ...
    def text_delivery(self, provider_id: str, status: str) -> bool: ...
    def memory(self, person: str) -> dict[str, Any] | None: ...
    async def sos_end(self, person: str) -> bool: ...
    async def clear_alerts(self, person: str, by: str) -> int: ...
    def stats(self) -> dict[str, Any]: ...


class Tokens:
    def __init__(self, admin: str, family: Sequence[str]) -> None:
        self.admin = admin
        self.family = tuple(family)

    def role(self, token: str) -> Role | None:
        # Constant-time comparisons: tokens are secrets.
        if hmac.compare_digest(token.encode(), self.admin.encode()):
            return "admin"
        if any(hmac.compare_digest(token.encode(), f.encode()) for f in self.family):
            return "family"
        return None


_bearer = HTTPBearer(auto_error=False)


def get_backend(request: Request) -> Backend:
    backend: Backend = request.app.state.backend
    return backend


def get_role(
    request: Request,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Role:
    tokens: Tokens = request.app.state.tokens
    role = tokens.role(creds.credentials) if creds else None
    if role is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or invalid bearer token",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return role


def require_admin(role: Annotated[Role, Depends(get_role)]) -> Role:
    if role != "admin":
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this action needs the admin token")
    return role


BackendDep = Annotated[Backend, Depends(get_backend)]
ReaderDep = Annotated[Role, Depends(get_role)]
AdminDep = Annotated[Role, Depends(require_admin)]
