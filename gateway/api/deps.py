"""API dependencies: the backend the routes read from, and token auth.

Roles: `admin` (everything), `family` (read, with PHI redacted, plus the family actions:
acknowledging an SOS and the all-clear), `viewer` (read-only with PHI redacted: a Grafana
kiosk or a wall screen)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Protocol

from fastapi import Depends, HTTPException, Path, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from gateway.api.tokens import Role, Tokens
from gateway.base.metrics import LatencyHistogram
from gateway.base.ports import LadderPort, MedicationPort, ReportPort
from gateway.contract.topics import ID_PATTERN
from gateway.household.model import Household


class Backend(Protocol):
    """What the API needs from the running gateway (gateway.runtime.gateway.Gateway provides it)."""

    household: Household
    meds: MedicationPort | None
    reports: ReportPort | None
    ladder: LadderPort | None
    reading_latency: LatencyHistogram
    sos_latency: LatencyHistogram
    tool_metrics: Callable[[], Mapping[str, Mapping[str, float]]] | None

    def ready(self) -> Mapping[str, bool]: ...
    def texts_mode(self) -> str: ...
    def components(self) -> Mapping[str, bool]: ...
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


def require_family(role: Annotated[Role, Depends(get_role)]) -> Role:
    if role not in ("admin", "family"):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this action needs a family or admin token")
    return role


def require_admin(role: Annotated[Role, Depends(get_role)]) -> Role:
    if role != "admin":
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this action needs the admin token")
    return role


BackendDep = Annotated[Backend, Depends(get_backend)]
ReaderDep = Annotated[Role, Depends(get_role)]  # any valid token
FamilyDep = Annotated[Role, Depends(require_family)]  # admin or family
AdminDep = Annotated[Role, Depends(require_admin)]
# A household person id in a path (a malformed one is 422, an unknown one 404).
PersonId = Annotated[str, Path(pattern=ID_PATTERN, description="a household person id")]

__all__ = [
    "AdminDep",
    "Backend",
    "BackendDep",
    "FamilyDep",
    "PersonId",
    "ReaderDep",
    "Role",
    "Tokens",
]
