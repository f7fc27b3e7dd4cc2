"""What a model call must answer: its output contract is a pydantic model class.

The engine derives from that one class both the JSON schema the worker turns into a
llama.cpp grammar (`grammar_schema`) and the check of the answer (`parse_output`), so the
grammar and the check cannot drift apart, and callers get a typed value rather than a
dict. Kept apart from the engine: the test double (tests/llm_double.py) and the callers
share it, with no process or llama.cpp in it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel, PydanticUserError, ValidationError

from gateway.base.errors import HealthGWError

M = TypeVar("M", bound=BaseModel)


class OutputError(HealthGWError, ValueError):
    """The model's JSON does not satisfy its output contract, or the contract has no JSON
    schema to build a grammar from."""


@lru_cache(maxsize=64)
def grammar_schema(output: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of `output` for `LlamaGrammar.from_json_schema` (cached per class;
    do not mutate it). Pydantic's schema is used as emitted: llama.cpp's converter ignores
    the titles, resolves `$defs`/`$ref`, and builds the same grammar from `anyOf` with
    null as from a list of types (tests/agents/llm/test_output.py)."""
    try:
        return output.model_json_schema()
    except PydanticUserError as e:
        raise OutputError(f"{output.__name__} has no JSON schema: {e}") from e


def parse_output(output: type[M], data: Any) -> M:
    """`data` (the parsed JSON) as an `output`, or OutputError. Strict: JSON's types as
    JSON means them (true is not 1, "3" is not a number), never coerced."""
    try:
        return output.model_validate(data, strict=True)
    except ValidationError as e:
        raise OutputError(f"{output.__name__}: {e.error_count()} error(s)") from e
