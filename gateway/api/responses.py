"""What every route can answer besides its 200, for the OpenAPI document (`responses=`).

The bodies are the ones the app really sends: `{"detail": "..."}` from HTTPException and from
the guards (gateway.api.guards), and `{"detail": [{"loc", "msg", "type"}]}` for a 422 (the
app's RequestValidationError handler, and POST /v1/assess). tests/gateway/api/test_openapi_fuzz.py
holds the live gateway to this document."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorOut(BaseModel):
    """Every error but a validation error: one sentence, never a value the client sent."""

    detail: str


class ValidationIssue(BaseModel):
    loc: list[str | int] = Field(description="where: body/query/path, then the field")
    msg: str = Field(description="the rule broken (never the value sent)")
    type: str


class ValidationErrorOut(BaseModel):
    detail: list[ValidationIssue]


Responses = dict[int | str, dict[str, Any]]
REF = "#/components/schemas/"  # the app adds the models (gateway.api.server.openapi)

_WHY: dict[int, str] = {
    400: "Malformed request (a bad Content-Length, a form with too many fields, no MessageSid)",
    401: "Missing or invalid bearer token",
    403: "The token's role may not do this",
    404: "No such person, or no such record",
    409: "Refused for safety (e.g. confirming a daily methotrexate schedule)",
    413: "Request body over HEALTHGW_API_MAX_BODY_BYTES",
    422: "The request does not match the schema (names the field and rule, never the value)",
    429: "Over HEALTHGW_API_RATE_LIMIT (per token and per address); see Retry-After",
    503: "The part of the gateway this route needs is not running, or busy",
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "Bearer"}},
    429: {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait"}},
}


def errors(*codes: int) -> Responses:
    """The `responses=` entries for these error codes. Errors are JSON on every route (an
    HTML or XML route too), so the content is given here rather than left to FastAPI, which
    would give them the route's own media type."""
    out: Responses = {}
    for code in codes:
        model = ValidationErrorOut if code == 422 else ErrorOut
        entry: dict[str, Any] = {
            "description": _WHY[code],
            "content": {"application/json": {"schema": {"$ref": REF + model.__name__}}},
        }
        if code in _HEADERS:
            entry["headers"] = _HEADERS[code]
        out[code] = entry
    return out


# Every route behind the rate limit that needs a token (any role); a role check adds 403.
READ = errors(401, 429)
ACT = errors(401, 403, 429)
# A route taking a JSON body: one that is not JSON, the body limit, the schema.
BODY = errors(400, 413, 422)
PERSON = errors(404)
UNAVAILABLE = errors(503)


def link(operation_id: str, description: str, **parameters: str) -> dict[str, Any]:
    """An OpenAPI link (for clients, and for the fuzzer's stateful phase)."""
    return {"operationId": operation_id, "parameters": parameters, "description": description}
