"""The worker's grammars: one llama.cpp grammar sampler per JSON schema, and the greedy
token choice under it.

A schema becomes a grammar with `LlamaGrammar.from_json_schema`; the grammar and its C
sampler are cached per schema (LRU: building one costs more than a short answer). At
temperature 0 the next token is the unconstrained best one if the grammar allows it, and
only when it is refused is the whole vocabulary masked, as llama.cpp's own sampler does:
the same tokens as masking first, about a third less time per token. Kept apart from the
runner (agents/llm/runner.py), which owns the prompt and the request: this is the ctypes
work against llama.cpp's sampler API, and its buffers.
"""

from __future__ import annotations

import ctypes
import json
import math
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

_GRAMMAR_CACHE = 32


class Grammars:
    """Grammar samplers for one loaded model (`llm`). Not thread-safe, like the Runner."""

    def __init__(self, llm: Any) -> None:
        import llama_cpp
        import numpy as np
        from llama_cpp import _internals, llama_grammar

        self._grammar_cls: Any = llama_grammar.LlamaGrammar
        # schema JSON -> (LlamaGrammar, its C grammar sampler, reset per request)
        self._grammars: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._lib: Any = llama_cpp
        self._np: Any = np
        self._n_vocab = int(llm.n_vocab())
        self._vocab = llm._model.vocab
        self._one: Any = (llama_cpp.llama_token_data * 1)()
        self._one_arr: Any = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._one, llama_cpp.llama_token_data_p),
            size=1,
            selected=-1,
            sorted=False,
        )
        self._all: Any = _internals.LlamaTokenDataArray(n_vocab=self._n_vocab)

    def get(self, schema: Mapping[str, Any]) -> tuple[Any, Any]:
        """(LlamaGrammar, C grammar sampler) for `schema`, cached (LRU)."""
        key = json.dumps(schema, ensure_ascii=False)  # key order matters to the grammar
        g = self._grammars.get(key)
        if g is None:
            grammar = self._grammar_cls.from_json_schema(key, verbose=False)
            smpl = self._lib.llama_sampler_init_grammar(
                self._vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
            )
            if not smpl:
                raise ValueError("llama.cpp refused the grammar built from this schema")
            g = (grammar, smpl)
            self._grammars[key] = g
            if len(self._grammars) > _GRAMMAR_CACHE:
                _, (_, old) = self._grammars.popitem(last=False)
                self._lib.llama_sampler_free(old)
        else:
            self._grammars.move_to_end(key)
        return g

    def close(self) -> None:
        for _, smpl in self._grammars.values():
            self._lib.llama_sampler_free(smpl)
        self._grammars.clear()

    def greedy_token(self, smpl: Any, ctx: Any) -> int:
        """The best token the grammar allows after the last evaluated one; -1: none."""
        logits = self._np.ctypeslib.as_array(
            self._lib.llama_get_logits_ith(ctx, -1), shape=(self._n_vocab,)
        )
        tok = int(logits.argmax())
        if not self._allowed(smpl, tok):
            tok = self._best_allowed(smpl, logits)
        return tok

    def _allowed(self, smpl: Any, tok: int) -> bool:
        one = self._one[0]
        one.id, one.logit, one.p = tok, 0.0, 0.0
        arr = self._one_arr
        arr.size, arr.selected, arr.sorted = 1, -1, False
        self._lib.llama_sampler_apply(smpl, ctypes.byref(arr))
        return math.isfinite(self._one[0].logit)

    def _best_allowed(self, smpl: Any, logits: Any) -> int:
        cand = self._all
        cand.copy_logits(logits)
        self._lib.llama_sampler_apply(smpl, ctypes.byref(cand.candidates))
        masked = cand.candidates_data.logit
        i = int(masked.argmax())
        return int(cand.candidates_data.id[i]) if math.isfinite(float(masked[i])) else -1
