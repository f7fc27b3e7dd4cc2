"""Reading the household file safely: a size cap, UTF-8, plain YAML only (no tags beyond the
core ones, aliases allowed but bounded, no duplicate keys, bounded nesting) or JSON. Every
problem becomes one `path:line: where: what` line; nothing else escapes (gateway/household/model.py
turns these into a ConfigError)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from gateway.base.errors import HealthGWError

try:  # libyaml: ~10x faster, and its parser caps nesting itself instead of recursing
    from yaml import CSafeLoader as _Base
except ImportError:  # pragma: no cover - the pinned wheel ships libyaml
    from yaml import SafeLoader as _Base  # type: ignore[assignment]

MAX_BYTES = 16 * 1024 * 1024  # a 10,000-person care home is ~4 MB; /dev/zero is refused
MAX_DEPTH = 32  # the schema needs 6 levels
# Values after alias expansion: 10,000 persons are ~300k; a "billion laughs" stops here.
MAX_NODES = 2_000_000
MAX_REPORTED = 100

_CORE = "tag:yaml.org,2002:"
_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "map", "seq"))
_TAGS_OK = _TAGS | {_CORE + "timestamp", _CORE + "merge"}
_PLAIN = re.compile(r"^[A-Za-z0-9_\-()]+$")


class Problem(HealthGWError):
    """One problem with the file: where (a dotted path, or a kind) and what, at a line."""

    def __init__(self, line: int, where: str, what: str) -> None:
        super().__init__(f"{line}: {where}: {what}")
        self.line, self.where, self.what = max(1, line), where, what

    def render(self, path: Path) -> str:
        return f"{path}:{self.line}: {self.where}: {one_line(self.what)}"


def one_line(text: str, limit: int = 300) -> str:
    """A message on one short line (keys and values in it come from the file)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def where_of(loc: tuple[Any, ...]) -> str:
    """A dotted path; odd keys quoted so the `file:line: where: what` shape still parses."""
    parts = []
    for p in loc:
        s = str(p)
        parts.append(s if _PLAIN.match(s) else one_line(ascii(s), 60).replace(":", "\\x3a"))
    if len(parts) > 12:  # a deeply nested path: its start and end say where
        parts = [*parts[:6], "…", *parts[-5:]]
    return ".".join(parts) or "(top level)"


def _short(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


class _Loader(_Base):
    """Safe loading where a bad value names its line instead of raising a bare exception."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
            # `!!int abc`, `!!bool maybe`, an int of 5000 digits: not a YAML syntax error,
            # but the base constructors raise plain exceptions for them.
            what = f"not a valid {_short(node.tag)} value ({type(exc).__name__})"
            raise ConstructorError(None, None, what, node.start_mark) from None

    def construct_lenient_timestamp(self, node: yaml.Node) -> Any:
        # `1944-13-02` looks like a date but is none: keep the text, so the field's own
        # validation reports it with its path and line.
        try:
            return self.construct_yaml_timestamp(node)  # type: ignore[arg-type]
        except (ValueError, OverflowError, AttributeError):
            return self.construct_scalar(node)  # type: ignore[arg-type]


_Loader.add_constructor(_CORE + "timestamp", _Loader.construct_lenient_timestamp)


def _children(
    node: yaml.Node, path: tuple[Any, ...]
) -> Iterator[tuple[yaml.Node, tuple[Any, ...]]]:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            yield k, (*path, "(key)")
            yield v, (*path, k.value if isinstance(k, yaml.ScalarNode) else "(key)")
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield item, (*path, i)


def inspect(root: yaml.Node) -> None:
    """Tags, duplicate keys, nesting and size after alias expansion, over the node graph (each
    shared node visited once, iteratively: a bomb or a deep file costs what its text costs)."""
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    stack: list[tuple[yaml.Node, tuple[Any, ...], bool]] = [(root, (), False)]
    while stack:
        node, path, done = stack.pop()
        key = id(node)
        line = node.start_mark.line + 1
        if done:
            kids = [c for c, _ in _children(node, path)]
            size[key] = 1 + sum(size[id(c)] for c in kids)
            height[key] = 1 + max((height[id(c)] for c in kids), default=0)
            if size[key] > MAX_NODES:
                raise Problem(line, where_of(path), f"over {MAX_NODES} values (alias expansion?)")
            if height[key] > MAX_DEPTH:
                raise Problem(line, where_of(path), f"nested more than {MAX_DEPTH} levels deep")
            continue
        if key in size:
            continue
        if key in height:  # entered, not finished: we are inside it
            raise Problem(line, where_of(path), "an alias refers to a node that contains it")
        height[key] = 0
        if node.tag not in _TAGS_OK:
            raise Problem(line, where_of(path), f"the tag {_short(node.tag)} is not allowed")
        if isinstance(node, yaml.MappingNode):
            _no_duplicate_keys(node, path)
        stack.append((node, path, True))
        stack.extend((c, p, False) for c, p in _children(node, path))


def _no_duplicate_keys(node: yaml.MappingNode, path: tuple[Any, ...]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for k, _ in node.value:
        if not isinstance(k, yaml.ScalarNode) or k.tag == _CORE + "merge":
            continue
        line = k.start_mark.line + 1
        first = seen.get((k.tag, k.value))
        if first is None:
            seen[(k.tag, k.value)] = line
        else:
            raise Problem(
                line, where_of((*path, k.value)), f"duplicate key (first at line {first})"
            )


def _yaml_problem(exc: yaml.YAMLError, text: str) -> Problem:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "syntax error"
        if exc.context and exc.problem:
            what += f" ({exc.context}"
            if exc.context_mark is not None:
                what += f" at line {exc.context_mark.line + 1}"
            what += ")"
        return Problem(mark.line + 1 if mark else 1, "not valid YAML", what)
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        return Problem(line, "not valid YAML", f"character #x{exc.character:04x}: {exc.reason}")
    return Problem(1, "not valid YAML", str(exc))


def read_text(path: Path) -> str:
    """The file's text; Problem for a file too large or not UTF-8. OSError passes through."""
    with path.open("rb") as fh:  # bounded read: `--household /dev/zero` must not eat memory
        raw = fh.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        line = raw.count(b"\n", 0, MAX_BYTES) + 1
        raise Problem(line, "(file)", f"larger than the {MAX_BYTES // 1024} KiB limit")
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise Problem(line, "(file)", f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def compose(text: str) -> yaml.Node | None:
    """The checked node graph of a YAML text (None for an empty file); Problem otherwise."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        raise _yaml_problem(exc, text) from None
    except RecursionError:  # the pure-Python parser recurses; libyaml caps nesting itself
        raise Problem(1, "not valid YAML", f"nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()
    if root is not None:
        inspect(root)
    return root


def parse(path: Path, text: str) -> Any:
    """The data of a YAML or JSON household text; Problem for anything unreadable."""
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise Problem(exc.lineno, "not valid JSON", exc.msg) from None
        except (ValueError, RecursionError) as exc:  # a 5000-digit int; 100k nested lists
            raise Problem(1, "not valid JSON", one_line(str(exc)) or "nested too deeply") from None
        try:  # duplicate keys and nesting, through the YAML view of the same text
            compose(text.replace("\t", " "))
        except Problem as p:
            if p.where != "not valid YAML":  # a JSON nicety PyYAML lacks is not the file's fault
                raise
        return data
    root = compose(text)
    if root is None:
        return None
    loader = _Loader(text)
    try:
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise _yaml_problem(exc, text) from None
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as e:
        raise Problem(1, "not valid YAML", f"cannot build the document ({type(e).__name__})") from e
    finally:
        loader.dispose()


def line_map(text: str) -> dict[tuple[str, ...], int]:
    """Each YAML path (keys and list indices, as text) to its 1-based line; {} if unparsable."""
    try:
        root = compose(text.replace("\t", " ") if text.lstrip().startswith(("{", "[")) else text)
    except Problem:
        return {}
    lines: dict[tuple[str, ...], int] = {}
    if root is None:
        return lines
    stack: list[tuple[yaml.Node, tuple[str, ...]]] = [(root, ())]
    while stack and len(lines) < MAX_NODES:
        node, path = stack.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    lines.setdefault((*path, k.value), k.start_mark.line + 1)
                    stack.append((v, (*path, k.value)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, str(i))) for i, item in enumerate(node.value))
    return lines


def nearest_line(lines: dict[tuple[str, ...], int], loc: tuple[Any, ...]) -> int | None:
    key = tuple(str(p) for p in loc)
    for cut in range(len(key), -1, -1):
        if key[:cut] in lines:
            return lines[key[:cut]]
    return None
