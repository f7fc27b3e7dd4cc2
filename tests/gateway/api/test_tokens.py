"""Item 1: weak API tokens are refused at start; the generated token file is private and
written atomically; an empty or weak file left by a crash is regenerated."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from gateway.api import tokens as tokens_mod
from gateway.api.server import create_app
from gateway.api.tokens import Tokens, WeakTokenError, admin_token, token_problem
from gateway.base.errors import ConfigError, HealthGWError
from gateway.base.settings import Settings
from gateway.household.model import load_household
from gateway.runtime.gateway import Gateway
from tests.gateway.api.stub import ADMIN, FAMILY, ROOT, VIEWER, StubBackend

GOOD = "Zq3-vY8_kP2mW7xR4tN9bL6cH1jD5fG0"


def settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(data_dir=tmp_path, household=ROOT / "examples" / "household.yaml", **kw)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "   ",
        "short-but-random-Zq3",  # 20 characters
        "change-me",
        "CHANGE-ME-0123456789-abcdefghij",
        "changeme_please_0123456789abcdef",
        "secret-0123456789-abcdefghijklmn",
        "Password0123456789abcdefghijklmn",
        "token-0123456789-abcdefghijklmno",
        "a" * 40,
        "abababababababababababababababab",
        f" {GOOD}",
    ],
)
def test_weak_tokens_have_a_problem(token: str) -> None:
    assert token_problem(token) is not None


def test_strong_tokens_pass() -> None:
    assert token_problem(GOOD) is None
    assert token_problem(tokens_mod.new_token()) is None
    assert len(tokens_mod.new_token()) >= 40


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("api_token", ""),
        ("api_token", "tiny"),
        ("api_token", "change-me-now-0123456789abcdef"),
        ("family_tokens", "tiny"),
        ("family_tokens", "CHANGE-ME-now-0123456789abcdef"),
        ("viewer_tokens", "tiny"),
        ("viewer_tokens", "password-0123456789abcdefghij"),
    ],
)
def test_gateway_refuses_to_start_with_a_weak_token(tmp_path: Path, field: str, bad: str) -> None:
    values: dict[str, object] = {"api_token": GOOD}
    values[field] = [bad] if field != "api_token" else bad
    s = settings(tmp_path, **values)
    with pytest.raises(WeakTokenError) as info:
        Gateway(s, load_household(ROOT / "examples" / "household.yaml"))
    assert isinstance(info.value, ConfigError) and isinstance(info.value, HealthGWError)
    env = {"api_token": "HEALTHGW_API_TOKEN", "family_tokens": "HEALTHGW_FAMILY_TOKENS",
           "viewer_tokens": "HEALTHGW_VIEWER_TOKENS"}[field]  # fmt: skip
    assert env in str(info.value)
    if bad:
        assert bad not in str(info.value)  # the message never prints the token


def test_empty_env_token_is_refused_not_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEALTHGW_API_TOKEN", "")
    s = settings(tmp_path)
    assert s.api_token is not None and s.api_token.get_secret_value() == ""
    with pytest.raises(WeakTokenError, match="HEALTHGW_API_TOKEN is empty"):
        admin_token(s, tmp_path)


def test_a_token_in_two_roles_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WeakTokenError, match="twice"):
        admin_token(settings(tmp_path, api_token=GOOD, family_tokens=[GOOD]), tmp_path)


def test_empty_admin_token_cannot_open_the_websocket() -> None:
    # Before: admin_token="" was accepted and a socket with no credentials became admin.
    with pytest.raises(WeakTokenError):
        create_app(StubBackend(), admin_token="")
    assert Tokens(ADMIN).role("") is None
    app = create_app(StubBackend(), admin_token=ADMIN, rate_limit="off")
    with (
        TestClient(app) as c,
        pytest.raises(WebSocketDisconnect),
        c.websocket_connect("/v1/persons/dad/chat/ws?token=") as ws,
    ):
        ws.receive_json()


def test_generated_token_is_private_and_reused(tmp_path: Path) -> None:
    s = settings(tmp_path)
    first = admin_token(s, tmp_path)
    path = tmp_path / "api_token"
    assert token_problem(first) is None and len(first) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == first + "\n"
    assert admin_token(s, tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == ["api_token"]  # no temp file left


def test_gateway_uses_the_generated_token(tmp_path: Path) -> None:
    gw = Gateway(settings(tmp_path), load_household(ROOT / "examples" / "household.yaml"))
    assert gw.api_token == (tmp_path / "api_token").read_text().strip()


@pytest.mark.parametrize("left", ["", "\n", "abc123\n", "change-me\n"])
def test_empty_or_weak_token_file_is_regenerated(
    tmp_path: Path, left: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "api_token"
    path.write_text(left)
    with caplog.at_level(logging.WARNING, logger="gateway.api.tokens"):
        token = admin_token(settings(tmp_path), tmp_path)
    assert token_problem(token) is None
    assert path.read_text() == token + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "no usable token" in caplog.text and token not in caplog.text


def test_readable_token_file_is_restricted(tmp_path: Path) -> None:
    path = tmp_path / "api_token"
    path.write_text(GOOD + "\n")
    path.chmod(0o644)
    assert admin_token(settings(tmp_path), tmp_path) == GOOD
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_token_file_is_created_0600_then_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file is opened O_CREAT|O_EXCL with mode 0600 (never world-readable, never
    the real name while empty), and only renamed once written and fsynced."""
    opened: list[tuple[str, int, int]] = []
    synced: list[int] = []
    real_open, real_fsync, real_replace = os.open, os.fsync, os.replace

    def spy_open(path: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        opened.append((os.fspath(path), flags, mode))
        return real_open(path, flags, mode)

    def spy_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    def spy_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        assert synced, "renamed before fsync"
        assert Path(src).read_text().strip() and stat.S_IMODE(Path(src).stat().st_mode) == 0o600
        assert not Path(dst).exists()
        real_replace(src, dst)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "replace", spy_replace)
    admin_token(settings(tmp_path), tmp_path)
    path, flags, mode = opened[0]
    assert Path(path).parent == tmp_path and Path(path).name != "api_token"
    assert flags & os.O_CREAT and flags & os.O_EXCL and mode == 0o600


def test_failed_write_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        admin_token(settings(tmp_path), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_family_and_viewer_tokens_get_their_roles() -> None:
    t = Tokens(ADMIN, [FAMILY], [VIEWER])
    assert (t.role(ADMIN), t.role(FAMILY), t.role(VIEWER)) == ("admin", "family", "viewer")
    assert t.role(ADMIN + "x") is None and t.role(None) is None
