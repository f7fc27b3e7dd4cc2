"""Checking that a webhook (an SMS reply, a delivery report) really comes from Twilio.

Twilio signs the exact URL it called plus every form field (X-Twilio-Signature, HMAC-SHA1
with the account's auth token). Behind a reverse proxy or tunnel the hub sees another URL
(http://127.0.0.1:8080/v1/... for https://hub.example.org/healthgw/v1/...), so with
HEALTHGW_PUBLIC_URL set the signed URL is rebuilt from it. Blank and repeated fields are
signed too: dropping or collapsing them would reject genuine requests.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from twilio.request_validator import RequestValidator

MAX_FIELDS = 1000  # Twilio sends a few dozen; more is not Twilio


class Form(dict[str, list[str]]):
    """A posted form with every value of every field, in order. `getall` is what twilio's
    RequestValidator looks for to sign each value of a repeated field."""

    @classmethod
    def parse(cls, body: bytes) -> Form:
        """Form-encoded body; blank values kept. ValueError past MAX_FIELDS fields."""
        pairs = parse_qsl(
            body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=MAX_FIELDS
        )
        return cls.of(pairs)

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> Form:
        form = cls()
        for k, v in pairs:
            form.setdefault(k, []).append(v)
        return form

    def getall(self, name: str) -> list[str]:
        return self[name]

    def first(self, name: str, default: str = "") -> str:
        values = self.get(name)
        return values[0] if values else default


def signed_url(
    public_url: str | None, request_url: str, path: str, root_path: str, query: str
) -> str:
    """The URL Twilio called (and signed). Without a public URL: the one the request came in
    on. With one: its scheme, host, port and path prefix + the request's path below the app's
    root + the query string, exactly as received."""
    if not public_url:
        return request_url
    pub = urlsplit(public_url)
    below = path[len(root_path) :] if root_path and path.startswith(root_path) else path
    return urlunsplit((pub.scheme, pub.netloc, pub.path.rstrip("/") + below, query, ""))


def is_signed(auth_token: str, url: str, form: Form, signature: str) -> bool:
    """Constant-time check of X-Twilio-Signature (the SDK tries the URL with and without
    the default port, as Twilio itself is inconsistent about it)."""
    return bool(RequestValidator(auth_token).validate(url, form, signature))
