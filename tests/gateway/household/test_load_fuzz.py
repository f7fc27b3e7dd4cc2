"""Malformed household files: every one gives `file:line: where: what` problems (and exit 2
from the real CLI), never a traceback. Mutations of the example file, text and data level."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.base.errors import ConfigError
from gateway.household.model import Household, load_household

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE_TEXT = (ROOT / "examples" / "household.yaml").read_text()
EXAMPLE_DATA: dict[str, Any] = yaml.safe_load(EXAMPLE_TEXT)
HEALTHGW = ROOT / ".venv" / "bin" / "healthgw"
FUZZ = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Values that are wrong somewhere in a household file: types, impossible dates, tags,
# anchors and aliases, numbers no parser should choke on, control characters.
BAD_VALUES = [
    "1944-13-02", "2001-02-29", "0000-01-01", "1944-03-02 25:61:00", "9999-12-31", "1800-01-01",
    "[1, 2]", "{a: 1}", "{}", "[]", "~", "null", "true", "-1", "0", "1e400", ".inf", ".nan",
    "9" * 5000, "0x_", "'+447700900101'", '"\\x00"', "\x07", "\t",
    "!!python/object:os.system x", "!!python/name:os.system", "!custom {a: 1}", "!<tag:x> y",
    "!!binary aGVsbG8=", "!!set {a, b}", "!!omap [a: 1]", "!!int abc", "!!float x",
    "!!bool maybe", "!!timestamp 2020-13-01", "!!null x", "!!map [1]", "!!str [1]",
    "&a x", "*a", "*nope", "&a [*a]", "<<", "{<<: 5}", "[&b x, *b, *b]", "? [a]\n  : 1",
    "|\n  text", ">-\n  folded", "'unterminated", '"unterminated', "[unclosed", "{unclosed",
    "a: b: c", "- x", "%YAML 1.1", "---", "...", "@reserved", "`backtick",
]  # fmt: skip

_PROBLEM = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<where>[^:\n]+): (?P<what>\S.*)$")


def check_outcome(path: Path, text_lines: int) -> Household | None:
    """Load in-process: a Household, or a ConfigError whose every problem has the form."""
    try:
        return load_household(path)
    except ConfigError as exc:
        head, *problems = str(exc).split("\n")
        assert head == "invalid household file:", str(exc)
        assert problems, str(exc)
        for raw in problems:
            assert raw.startswith("  "), raw
            m = _PROBLEM.match(raw[2:])
            assert m is not None, raw
            assert m["file"] == str(path), raw
            assert 1 <= int(m["line"]) <= text_lines + 1, raw
        return None


def write(tmp_path: Path, body: bytes | str, name: str = "hh.yaml") -> tuple[Path, int]:
    raw = body.encode() if isinstance(body, str) else body
    p = tmp_path / name
    p.write_bytes(raw)
    return p, raw.count(b"\n") + 1


# --- text-level mutations -----------------------------------------------------------------------

_LINES = EXAMPLE_TEXT.splitlines(keepends=True)
_VALUE_LINES = [i for i, line in enumerate(_LINES) if re.search(r":\s+\S", line)]


@st.composite
def mutated_text(draw: st.DrawFn) -> bytes:
    lines = list(_LINES)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from(_VALUE_LINES)) % len(lines)  # lines may have been dropped
        kind = draw(st.sampled_from(["value", "dup", "drop", "inject", "indent"]))
        if kind == "value":  # replace the value after the first `key: ` with a bad one
            bad = draw(st.sampled_from(BAD_VALUES) | st.text(max_size=20))
            lines[i] = re.sub(r"(:\s+).*", lambda m, b=bad: m.group(1) + b, lines[i], count=1)  # type: ignore[misc]
        elif kind == "dup":  # duplicate keys, duplicate ids, a second person
            lines.insert(i, lines[i])
        elif kind == "drop":
            del lines[i]
        elif kind == "inject":  # a tag or an anchor in front of the value
            pre = draw(st.sampled_from(["!!python/object:x ", "!t ", "&x ", "*x ", "!!str "]))
            lines[i] = re.sub(r"(:\s+)", lambda m, p=pre: m.group(1) + p, lines[i], count=1)  # type: ignore[misc]
        else:
            lines[i] = draw(st.sampled_from(["\t", " ", "   "])) + lines[i]
    raw = "".join(lines).encode()
    cut = draw(st.none() | st.integers(0, len(raw)))
    if cut is not None:  # truncated mid-file (an interrupted copy)
        raw = raw[:cut]
    if draw(st.booleans()):  # random bytes somewhere: not UTF-8, NULs, control characters
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=8)) + raw[at:]
    return raw


@FUZZ
@given(body=mutated_text())
def test_mutated_example_text(tmp_path: Path, body: bytes) -> None:
    check_outcome(*write(tmp_path, body))


# --- data-level mutations -----------------------------------------------------------------------

_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    | st.dates().map(str) | st.sampled_from(["1944-13-02", "+447700900101", "watch-maria"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
    max_leaves=8,
)  # fmt: skip


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


_ALL_PATHS = _paths(EXAMPLE_DATA)[1:]


@st.composite
def mutated_data(draw: st.DrawFn) -> tuple[str, bytes]:
    data = json.loads(json.dumps(EXAMPLE_DATA, default=str))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_ALL_PATHS))
        parent: Any = data
        try:
            for p in path[:-1]:
                parent = parent[p]
            if draw(st.booleans()) or not isinstance(parent, list):
                parent[path[-1]] = draw(_JSONISH)
            else:  # a duplicated element: duplicate person, device or contact ids
                parent.append(parent[path[-1]])
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed that path
    as_json = draw(st.booleans())
    if as_json:
        return "hh.json", json.dumps(data, indent=draw(st.sampled_from([None, 2, "\t"]))).encode()
    return "hh.yaml", yaml.safe_dump(data, allow_unicode=True).encode()


@FUZZ
@given(case=mutated_data())
def test_mutated_example_data(tmp_path: Path, case: tuple[str, bytes]) -> None:
    name, body = case
    check_outcome(*write(tmp_path, body, name))


# --- explicit cases, in-process and through the real CLI -----------------------------------------


def _bomb(levels: int = 9) -> str:
    out = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        out.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(out) + f"\npersons: *l{levels}\n"


CASES: dict[str, tuple[bytes | str, str, str]] = {
    # name: (file body, expected `where`, a word of `what`)
    "impossible-date": (
        EXAMPLE_TEXT.replace("birth_date: 1944-03-02", "birth_date: 1944-13-02"),
        "persons.0.birth_date",
        "month",
    ),
    "python-tag": (
        EXAMPLE_TEXT.replace("name: Maria Lopez", "name: !!python/object/apply:os.system [id]"),
        "persons.0.name",
        "tag",
    ),
    "custom-tag": (EXAMPLE_TEXT.replace("sex: male", "sex: !sex male"), "persons.1.sex", "tag"),
    "billion-laughs": (_bomb(), "persons", "values"),
    "recursive-alias": ("persons: &p [*p]\n", "persons.0", "alias"),
    "duplicate-key": (
        EXAMPLE_TEXT.replace("    sex: female\n", "    sex: female\n    sex: male\n"),
        "persons.0.sex",
        "duplicate",
    ),
    "duplicate-id": (EXAMPLE_TEXT.replace("id: dad", "id: grandma"), "(top level)", "twice"),
    "wrong-type": (
        EXAMPLE_TEXT.replace("interval_s: 5}", "interval_s: [5]}", 1),
        "persons.0.devices.0.interval_s",
        "number",
    ),
    "not-utf8": (EXAMPLE_TEXT.encode().replace(b"Maria", b"Mar\xeda"), "(file)", "UTF-8"),
    "empty": ("", "(top level)", "mapping"),
    "top-level-list": ("- id: grandma\n- id: dad\n", "(top level)", "mapping"),
    "deep": ("persons: " + "[" * 300 + "]" * 300 + "\n", "persons.0.0.0.0.0", "nested"),
    "too-deep-for-libyaml": ("persons: " + "[" * 5000 + "]" * 5000 + "\n", "not valid YAML", ""),
    "huge": ("persons:\n" + "  # padding\n" * 1_500_000, "(file)", "limit"),
    "syntax": ("persons:\n  - id: a\n    name: [unclosed\n", "not valid YAML", ""),
}


@pytest.mark.parametrize("name", list(CASES))
def test_explicit_cases_in_process(tmp_path: Path, name: str) -> None:
    body, where, word = CASES[name]
    path, n = write(tmp_path, body)
    assert check_outcome(path, n) is None
    with pytest.raises(ConfigError) as ei:
        load_household(path)
    first = str(ei.value).split("\n")[1].strip()
    m = _PROBLEM.match(first)
    assert m is not None and m["where"].startswith(where), first
    assert word in m["what"], first


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = [str(HEALTHGW)] if HEALTHGW.exists() else [sys.executable, "-m", "healthgw.cli"]
    return subprocess.run(
        [*exe, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.mark.parametrize(
    "name", ["impossible-date", "python-tag", "billion-laughs", "not-utf8", "top-level-list"]
)
def test_check_config_cli_refuses_with_lines(tmp_path: Path, name: str) -> None:
    body, where, word = CASES[name]
    path, _ = write(tmp_path, body)
    proc = _cli("check-config", "--household", str(path))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    problems = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip().startswith(str(path))]
    assert problems, proc.stderr
    m = _PROBLEM.match(problems[0])
    assert m is not None and m["where"].startswith(where) and word in m["what"], proc.stderr


def test_run_refuses_a_bad_household_before_creating_anything(tmp_path: Path) -> None:
    path, _ = write(tmp_path, CASES["impossible-date"][0])
    data = tmp_path / "data"
    proc = _cli(
        "run",
        "--household",
        str(path),
        env={
            "HEALTHGW_DATA_DIR": str(data),
            "HEALTHGW_API_TOKEN": "fuzz-admin-token-0123456789-abcdefgh",
            "HEALTHGW_MQTT_URL": "mqtt://127.0.0.1:9",  # never reached
        },
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert re.search(rf"{re.escape(str(path))}:6: persons\.0\.birth_date: .*month", proc.stderr)
    assert not data.exists()
