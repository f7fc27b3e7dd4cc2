"""The local model's own process.

`serve` is the target of a `multiprocessing` *spawn* process (see engine.LocalModel): it
lowers its own priority (nice 19 by default) so the gateway's safety paths keep the CPU
while the model generates, loads `llama_cpp.Llama` once, then answers requests from its
pipe one at a time. llama-cpp-python's Python sampling loop runs here, so it never holds
the gateway's GIL.

Request (dict): {id, static, dynamic, schema, max_tokens, temperature}, or
{id, prime: True, static} to evaluate the static part alone (warms the cache).
Response (dict): {id, ok, text, data, error, finish_reason, prompt_tokens,
completion_tokens, cached_tokens, static_tokens, first_token_ms, total_ms}

The prompt is the model's own chat template with `static` as the system message and
`dynamic` as the user message. The static part renders to the same tokens on every call
(checked: `static_tokens` is 0 if it ever did not), so the prefix match llama-cpp-python's
`Llama.generate` does (keep the KV cache of the longest common prefix with the previous
prompt, drop the rest, evaluate only what differs; `_eval_prompt` does the same) reuses
it: a warm call evaluates only the dynamic part. `cached_tokens` says how many prompt
tokens were reused.

Output is constrained by a grammar built from the JSON schema
(`LlamaGrammar.from_json_schema`, cached per schema with its llama.cpp grammar sampler).
Tokens are produced one by one (at temperature 0 by `_greedy`, which checks the
unconstrained best token against the grammar and masks the whole vocabulary only when it
is refused, as llama.cpp's own sampler does: the same tokens, about a third less time per
token; otherwise by `Llama.generate`), which gives the first-token time, a cancellation
check between tokens (the engine sets the shared `cancel` value to a request id when the
caller stopped waiting for it) and an exact finish reason: "stop" (end-of-generation
token), "length" (max_tokens reached: error "truncated", never a guessed value) or
"cancelled". The text must parse as JSON ("invalid_json" otherwise); the engine then
validates it against the schema.

The model file is verified here, right before llama.cpp opens it, on every (re)start: a
file swapped after the gateway's startup check is never parsed (model_path.verified_model).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Protocol

from agents.llm.model_path import verified_model

DEFAULT_SEED = 1234
_GRAMMAR_CACHE = 32
_STATIC_CACHE = 8
# A fallback chat template (ChatML, SmolLM2's own) for a GGUF that has none.
_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class CancelFlag(Protocol):
    """A shared int (multiprocessing RawValue): the highest request id to abandon."""

    value: int


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    model_path: str
    n_ctx: int = 2048
    n_threads: int | None = None  # None: os.cpu_count()
    nice: int = 19  # absolute niceness to reach (0 = leave as is)
    seed: int = DEFAULT_SEED
    # The configured file's expected SHA-256 (None: the bundled file's recorded one, or
    # HEALTHGW_MODEL_SHA256 from the environment). Checked by `verified_model`.
    sha256: str | None = None


def lower_priority(nice: int) -> int:
    """Raise this process's niceness to `nice` (never lowers it). Returns the niceness."""
    current = os.nice(0)
    if nice > current:
        try:
            return os.nice(nice - current)
        except OSError:
            return current
    return current


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)


class Runner:
    """One loaded model. Not thread-safe: one request at a time."""

    def __init__(self, config: WorkerConfig) -> None:
        import llama_cpp
        import numpy as np
        from llama_cpp import _internals, llama_chat_format, llama_grammar

        self.config = config
        self.n_threads = config.n_threads or os.cpu_count() or 1
        with verified_model(config.model_path, config.sha256) as model_file:
            self.llm: Any = llama_cpp.Llama(
                model_path=model_file,
                n_ctx=config.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                seed=config.seed,
                verbose=False,
            )
        llm = self.llm
        self._grammar_cls: Any = llama_grammar.LlamaGrammar
        eos_id = int(llm.token_eos())
        bos_id = int(llm.token_bos())
        eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        template = llm.metadata.get("tokenizer.chat_template") or _CHATML
        fmt = llama_chat_format.Jinja2ChatFormatter
        self._chat = fmt(template=template, eos_token=eos, bos_token=bos)
        self._system_only = fmt(
            template=template, eos_token=eos, bos_token=bos, add_generation_prompt=False
        )
        self._stop_ids = {eos_id}
        for name in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>"):
            ids = llm.tokenize(name.encode(), add_bos=False, special=True)
            if len(ids) == 1:
                self._stop_ids.add(int(ids[0]))
        # schema JSON -> (LlamaGrammar, its C grammar sampler, reset per request)
        self._grammars: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._statics: OrderedDict[str, list[int]] = OrderedDict()
        # Greedy grammar sampling, the llama.cpp way: check the unconstrained best token
        # against the grammar alone (one candidate), mask the whole vocabulary only when
        # it is refused. Same tokens as masking first, at a fraction of the cost.
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

    # -- prompt ---------------------------------------------------------------------

    def _tokens(self, text: str) -> list[int]:
        return [
            int(t) for t in self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        ]

    def _static_tokens(self, static: str) -> list[int]:
        toks = self._statics.get(static)
        if toks is None:
            msgs: list[Any] = [{"role": "system", "content": static}]
            toks = self._tokens(self._system_only(messages=msgs).prompt)
            self._statics[static] = toks
            if len(self._statics) > _STATIC_CACHE:
                self._statics.popitem(last=False)
        else:
            self._statics.move_to_end(static)
        return toks

    def prompt_tokens(self, static: str, dynamic: str) -> tuple[list[int], int]:
        """(prompt tokens, tokens of the static part: 0 if they are not a prefix)."""
        msgs: list[Any] = [
            {"role": "system", "content": static},
            {"role": "user", "content": dynamic},
        ]
        toks = self._tokens(self._chat(messages=msgs).prompt)
        stat = self._static_tokens(static)
        return toks, (len(stat) if toks[: len(stat)] == stat else 0)

    def _grammar(self, schema: Mapping[str, Any]) -> tuple[Any, Any]:
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

    def _cached_prefix(self, tokens: list[int]) -> int:
        llm = self.llm
        n = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens].tolist(), tokens, strict=False):
            if a != b:
                break
            n += 1
        # The last prompt token is always evaluated again: its logits are needed.
        return max(0, min(n, len(tokens) - 1))

    def _eval_prompt(self, tokens: list[int]) -> int:
        """Evaluate `tokens`, reusing the KV cache of their longest cached prefix (what
        `Llama.generate` does). Returns how many tokens were reused."""
        llm = self.llm
        n = self._cached_prefix(tokens)
        if n > 0 and not llm._ctx.kv_cache_seq_rm(-1, n, -1):
            n = 0  # this model's memory cannot drop a suffix
        if n == 0:
            llm.reset()
        else:
            llm.n_tokens = n
        llm.eval(tokens[n:])
        return n

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

    def _greedy(
        self,
        tokens: list[int],
        smpl: Any,
        max_tokens: int,
        stop: Any,
        t0: float,
        out: dict[str, Any],
    ) -> tuple[list[int], str]:
        """Temperature 0 under the grammar: (completion tokens, finish reason)."""
        lib, llm = self._lib, self.llm
        lib.llama_sampler_reset(smpl)
        out["cached_tokens"] = self._eval_prompt(tokens)
        ctx = llm._ctx.ctx
        completion: list[int] = []
        while True:
            logits = self._np.ctypeslib.as_array(
                lib.llama_get_logits_ith(ctx, -1), shape=(self._n_vocab,)
            )
            tok = int(logits.argmax())
            if not self._allowed(smpl, tok):
                tok = self._best_allowed(smpl, logits)
                if tok < 0:
                    return completion, "dead_end"
            if out["first_token_ms"] is None:
                out["first_token_ms"] = _ms(t0)
            if self._is_stop(tok):
                return completion, "stop"
            lib.llama_sampler_accept(smpl, tok)
            completion.append(tok)
            if stop():
                return completion, "cancelled"
            if len(completion) >= max_tokens:
                return completion, "length"
            llm.eval([tok])

    def _is_stop(self, tok: int) -> bool:
        return tok in self._stop_ids or bool(self._lib.llama_vocab_is_eog(self._vocab, tok))

    # -- one request ------------------------------------------------------------------

    def handle(self, req: Mapping[str, Any], cancel: CancelFlag | None = None) -> dict[str, Any]:
        t0 = time.perf_counter()
        rid = int(req["id"])
        out: dict[str, Any] = {
            "id": rid,
            "ok": False,
            "text": "",
            "data": None,
            "error": None,
            "finish_reason": None,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cached_tokens": 0,
            "static_tokens": 0,
            "first_token_ms": None,
            "total_ms": 0.0,
        }
        try:
            self._generate(req, rid, cancel, t0, out)
        except Exception as e:  # a model problem is an answer, never a dead worker
            out["error"] = "internal"
            out["detail"] = f"{type(e).__name__}: {e}"[:300]
        out["total_ms"] = _ms(t0)
        return out

    def _prime(self, static: str, t0: float, out: dict[str, Any]) -> None:
        """Evaluate only the static part, so the next real request finds it cached."""
        tokens = self._static_tokens(static)
        out["prompt_tokens"] = out["static_tokens"] = len(tokens)
        if len(tokens) >= self.config.n_ctx:
            out["error"] = "too_long"
            return
        out["cached_tokens"] = self._eval_prompt(tokens)
        out["first_token_ms"] = _ms(t0)
        out["finish_reason"] = "prime"
        out["ok"] = True

    def _sampled(
        self,
        tokens: list[int],
        grammar: Any,
        temperature: float,
        max_tokens: int,
        stop: Any,
        t0: float,
        out: dict[str, Any],
    ) -> tuple[list[int], str]:
        """Temperature > 0: llama-cpp-python's own loop (prefix match included)."""
        out["cached_tokens"] = self._cached_prefix(tokens)
        completion: list[int] = []
        for tok in self.llm.generate(tokens, temp=temperature, repeat_penalty=1.0, grammar=grammar):
            if out["first_token_ms"] is None:
                out["first_token_ms"] = _ms(t0)
            if self._is_stop(int(tok)):
                return completion, "stop"
            completion.append(int(tok))
            if stop():
                return completion, "cancelled"
            if len(completion) >= max_tokens:
                return completion, "length"
        return completion, "length"

    def _generate(
        self,
        req: Mapping[str, Any],
        rid: int,
        cancel: CancelFlag | None,
        t0: float,
        out: dict[str, Any],
    ) -> None:
        if cancel is not None and cancel.value >= rid:
            out["error"] = "cancelled"  # the caller gave up while this waited in the pipe
            out["finish_reason"] = "cancelled"
            return
        if req.get("prime"):
            self._prime(str(req["static"]), t0, out)
            return
        max_tokens = max(1, int(req.get("max_tokens", 96)))
        temperature = float(req.get("temperature", 0.0))
        try:
            grammar, smpl = self._grammar(req["schema"])
        except Exception as e:
            out["error"] = "bad_schema"
            out["detail"] = f"{type(e).__name__}: {e}"[:300]
            return
        tokens, static_n = self.prompt_tokens(str(req["static"]), str(req["dynamic"]))
        out["prompt_tokens"] = len(tokens)
        out["static_tokens"] = static_n
        if len(tokens) + max_tokens > self.config.n_ctx:
            out["error"] = "too_long"
            return

        def stop() -> bool:
            return cancel is not None and cancel.value >= rid

        llm = self.llm
        if temperature <= 0.0:
            completion, finish = self._greedy(tokens, smpl, max_tokens, stop, t0, out)
        else:
            completion, finish = self._sampled(
                tokens, grammar, temperature, max_tokens, stop, t0, out
            )
        text = llm.detokenize(completion, prev_tokens=tokens).decode("utf-8", errors="replace")
        out["text"] = text
        out["completion_tokens"] = len(completion)
        out["finish_reason"] = finish
        if finish == "length":
            out["error"] = "truncated"
            return
        if finish == "cancelled":
            out["error"] = "cancelled"
            return
        if finish == "dead_end":
            out["error"] = "internal"
            out["detail"] = "no token the grammar allows"
            return
        try:
            out["data"] = json.loads(text)
        except ValueError:
            out["error"] = "invalid_json"
            return
        out["ok"] = True


def serve(conn: Connection, cancel: CancelFlag, config: WorkerConfig) -> None:
    """Process entry point: load, say "ready" (or "failed"), then serve until None/EOF."""
    niceness = lower_priority(config.nice)
    t0 = time.perf_counter()
    try:
        runner = Runner(config)
    except BaseException as e:
        conn.send({"type": "failed", "error": f"{type(e).__name__}: {e}"[:500]})
        conn.close()
        return
    conn.send(
        {
            "type": "ready",
            "pid": os.getpid(),
            "load_ms": _ms(t0),
            "nice": niceness,
            "n_threads": runner.n_threads,
            "n_ctx": config.n_ctx,
        }
    )
    while True:
        try:
            req = conn.recv()
        except (EOFError, OSError):
            return  # the gateway is gone
        if req is None:
            runner.close()
            return
        resp = runner.handle(req, cancel)
        try:
            conn.send(resp)
        except OSError:
            return
