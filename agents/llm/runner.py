"""One loaded model answering one request: the llama.cpp calls of the worker process.

The prompt is the model's own chat template with `static` as the system message and
`dynamic` as the user message. The static part renders to the same tokens on every call
(checked: `static_tokens` is 0 if it ever did not), so the prefix match llama-cpp-python's
`Llama.generate` does (keep the KV cache of the longest common prefix with the previous
prompt, drop the rest, evaluate only what differs; `_eval_prompt` does the same) reuses
it: a warm call evaluates only the dynamic part. `cached_tokens` says how many prompt
tokens were reused.

Output is constrained by a grammar built from the request's JSON schema (agents/llm/
grammar.py). Tokens are produced one by one (at temperature 0 by `_greedy`, otherwise by
`Llama.generate`), which gives the first-token time, a cancellation check between tokens
(the engine sets the shared `cancel` value to a request id when the caller stopped
waiting for it) and an exact finish reason: "stop" (end-of-generation token), "length"
(max_tokens reached: error "truncated", never a guessed value) or "cancelled". The text
must parse as JSON ("invalid_json" otherwise); the engine then checks it against the
caller's output contract.

Kept apart from the process around it (agents/llm/worker.py: priority, pipe, request
loop), which it knows nothing about: a Runner can be driven directly (tests/
test_model_integrity.py loads one).
"""

from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents.llm.grammar import Grammars
from agents.llm.model_path import verified_model

if TYPE_CHECKING:
    from agents.llm.worker import CancelFlag, WorkerConfig

_STATIC_CACHE = 8
# A fallback chat template (ChatML, SmolLM2's own) for a GGUF that has none.
_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def elapsed_ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)


class Runner:
    """One loaded model. Not thread-safe: one request at a time."""

    def __init__(self, config: WorkerConfig) -> None:
        import llama_cpp
        from llama_cpp import llama_chat_format

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
        self._statics: OrderedDict[str, list[int]] = OrderedDict()
        self._lib: Any = llama_cpp
        self._vocab = llm._model.vocab
        self._grammars = Grammars(llm)

    def close(self) -> None:
        self._grammars.close()

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
            tok = self._grammars.greedy_token(smpl, ctx)
            if tok < 0:
                return completion, "dead_end"
            if out["first_token_ms"] is None:
                out["first_token_ms"] = elapsed_ms(t0)
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
        out["total_ms"] = elapsed_ms(t0)
        return out

    def _prime(self, static: str, t0: float, out: dict[str, Any]) -> None:
        """Evaluate only the static part, so the next real request finds it cached."""
        tokens = self._static_tokens(static)
        out["prompt_tokens"] = out["static_tokens"] = len(tokens)
        if len(tokens) >= self.config.n_ctx:
            out["error"] = "too_long"
            return
        out["cached_tokens"] = self._eval_prompt(tokens)
        out["first_token_ms"] = elapsed_ms(t0)
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
                out["first_token_ms"] = elapsed_ms(t0)
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
            grammar, smpl = self._grammars.get(req["schema"])
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
