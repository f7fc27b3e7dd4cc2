"""Supply chain: hash-pinned locks that setup.sh, the Dockerfile and CI install from, upper
bounds in pyproject.toml, digest-pinned images, bandit and `make audit`.

The locks are regenerated with scripts/lock.sh (network); these tests only read files,
except the bandit and audit ones, which run the tools offline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCKS = {name: ROOT / "requirements" / f"{name}.lock" for name in ("dev", "runtime", "build")}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# The one sdist in the lock (built from source): its archive's hash must be pinned.
LLAMA_SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)$")
_HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}$")
PACKAGES = ("gateway", "agents", "simulators")


def parse_lock(path: Path) -> dict[str, tuple[Version, list[str]]]:
    """name -> (version, hashes). Fails on anything but `name==version` lines, each
    followed by its --hash options, and comments."""
    text = path.read_text(encoding="utf-8")
    out: dict[str, tuple[Version, list[str]]] = {}
    for logical in re.sub(r"\\\n", " ", text).splitlines():
        line = logical.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        spec, *options = line.split()
        m = _PIN.match(spec)
        assert m, f"{path.name}: not an exact pin: {line!r}"
        assert options, f"{path.name}: {spec} has no --hash"
        for opt in options:
            assert _HASH.match(opt), f"{path.name}: {spec}: unexpected {opt!r}"
        name = canonicalize_name(m.group(1))
        assert name not in out, f"{path.name}: {name} twice"
        out[name] = (Version(m.group(3)), [o.split(":", 1)[1] for o in options])
    return out


def pyproject_requirements(*extras: str) -> list[Requirement]:
    reqs = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"][extra]]
    return reqs


# --- the locks -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_every_lock_line_is_an_exact_pin_with_sha256_hashes(name: str) -> None:
    pins = parse_lock(LOCKS[name])
    assert pins
    text = LOCKS[name].read_text(encoding="utf-8")
    # No index, find-links or trusted-host options, no URLs or editables: PyPI files only.
    for bad in ("--index-url", "--extra-index-url", "--find-links", "--trusted-host", "-e ", "://"):
        assert bad not in text, f"{name}.lock contains {bad!r}"


def test_the_llama_cpp_sdist_is_pinned_by_its_hash() -> None:
    version, hashes = parse_lock(LOCKS["dev"])["llama-cpp-python"]
    assert str(version) == "0.3.36"
    assert LLAMA_SDIST_SHA256 in hashes


def test_the_locks_agree_and_satisfy_pyproject() -> None:
    dev, runtime, build = (parse_lock(LOCKS[n]) for n in ("dev", "runtime", "build"))
    for other in (runtime, build):
        for name, (version, _) in other.items():
            if name in dev:
                assert dev[name][0] == version, f"{name}: {version} vs dev.lock {dev[name][0]}"
    for lock, reqs in (
        (dev, pyproject_requirements("dev", "llm")),
        (runtime, pyproject_requirements()),
    ):
        for req in reqs:
            name = canonicalize_name(req.name)
            assert name in lock, f"{name} is not locked: run scripts/lock.sh"
            assert req.specifier.contains(lock[name][0], prereleases=True), (
                f"{name}=={lock[name][0]} does not satisfy pyproject's {req}"
            )
    # The build backends that setup.sh and the Dockerfile install before anything builds.
    backend = Requirement(PYPROJECT["build-system"]["requires"][0])
    assert backend.specifier.contains(build[canonicalize_name(backend.name)][0])
    assert "scikit-build-core" in build


def test_runtime_dependencies_have_upper_bounds() -> None:
    """A major release that breaks the API must not arrive with a `scripts/lock.sh --upgrade`."""
    for req in pyproject_requirements("llm"):
        ops = {s.operator for s in req.specifier}
        assert ops & {"<", "==", "~="}, f"{req} has no upper bound"
    must = {"pydantic": "3", "fastapi": "1", "aiomqtt": "3", "twilio": "10", "numpy": "3"}
    for req in pyproject_requirements():
        if req.name in must:
            assert not req.specifier.contains(must[req.name] + ".0"), req


def test_setup_ci_and_the_dockerfile_install_only_from_the_locks() -> None:
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    installs = [ln for ln in setup.splitlines() if '"${pip[@]}"' in ln]
    assert any("--require-hashes -r requirements/build.lock" in ln for ln in installs)
    assert any(
        "--require-hashes --no-build-isolation -r requirements/dev.lock" in ln for ln in installs
    )
    assert any("--no-deps --no-build-isolation -e ." in ln for ln in installs)
    assert len(installs) == 3, installs
    # The stamp changes with the locks and pyproject.toml, so any change reinstalls.
    assert "requirements/dev.lock" in setup and "pyproject.toml" in setup and "sha256sum" in setup
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/setup.sh" in ci

    docker = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    run = re.sub(r"\\\n", " ", docker)
    pip_calls = re.findall(r"pip install[^&\n]*", run)
    assert pip_calls
    for call in pip_calls:
        assert "--require-hashes" in call or "--no-deps" in call, call
    assert "requirements/runtime.lock" in docker and "requirements/build.lock" in docker
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert "requirements" not in ignore


# --- images --------------------------------------------------------------------------------

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_refs() -> dict[str, str]:
    """Every image reference -> where it is used."""
    refs = {
        m: "Dockerfile" for m in re.findall(r"(?m)^FROM\s+(\S+)", (ROOT / "Dockerfile").read_text())
    }
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    for name, svc in compose["services"].items():
        if "image" in svc:
            refs[svc["image"]] = f"docker-compose.yml service {name}"
    return refs


def allowlist() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (ROOT / "scripts" / "unpinned-images.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            ref, _, reason = line.partition(" ")
            assert reason.strip(), f"{ref}: the allowlist needs a reason"
            out[ref] = reason.strip()
    return out


def test_every_image_is_pinned_by_digest_or_allowlisted_with_a_reason() -> None:
    allowed = allowlist()
    refs = image_refs()
    for ref, where in refs.items():
        assert _DIGEST.search(ref) or ref in allowed, f"{where}: {ref} has no @sha256 digest"
    stale = set(allowed) - set(refs)
    assert not stale, f"scripts/unpinned-images.txt lists images no longer used: {stale}"
    # The base image of the gateway is pinned: what the locks install on stays fixed too.
    assert all(_DIGEST.search(r) for r, w in refs.items() if w == "Dockerfile")


# --- bandit and audit ------------------------------------------------------------------------


@pytest.mark.skipif(
    shutil.which("bandit", path=str(Path(sys.executable).parent)) is None, reason="no bandit"
)
def test_bandit_finds_nothing_new() -> None:
    exe = Path(sys.executable).parent / "bandit"
    out = subprocess.run(
        [str(exe), "-c", "pyproject.toml", "-b", "bandit-baseline.json", "-q", "-r", *PACKAGES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:]


def test_audit_fails_clearly_when_its_data_is_out_of_reach(tmp_path: Path) -> None:
    """`make audit` must never pass (or hang) without its vulnerability data."""
    env = dict(os.environ, AUDIT_PROBE_URL="http://127.0.0.1:9/unreachable")
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "audit.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 2
    assert "cannot reach http://127.0.0.1:9/unreachable" in out.stderr
    assert "make audit" in out.stderr
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"(?m)^audit:.*\n\t@bash scripts/audit\.sh$", makefile)
    assert "--strict" in (ROOT / "scripts" / "audit.sh").read_text()
    assert re.search(r"(?m)^\t\$\(BIN\)/bandit -c pyproject\.toml", makefile)
