"""Symptom triage: free text -> which *kind of specialist* to book. Never a diagnosis.

Safety: this only helps choose a specialist for a routine appointment. Emergencies (chest pain
at rest, stroke signs, severe breathlessness, ...) are detected and escalated elsewhere by
deterministic code; nothing here decides whether something is urgent.

Model: TF-IDF word 1-2 grams + char_wb 2-5 grams -> multinomial logistic regression over the 18
specialties plus a "vague" class, trained on sentences generated from the knowledge base
(agents.triage.synth, with its word lists in agents.triage.phrasebook). Both vectorisers
preprocess with agents.triage.lay_lexicon.lay_expand, which appends plain KB terms for lay words
and euphemisms ("ticker" -> heart, "can't keep it up" -> erection problems), identically at
training and query time. The trained model is cached on disk under a name derived from a hash of
the KB, generator, phrasebook, lexicon and classifier source (and the scikit-learn version), so
editing any of them retrains automatically; an unreadable cache file is retrained, never fatal.
The cache is a pickle, so agents.triage.cache loads it only from a dir and file this user owns,
after checking its SHA-256 against the sidecar written with it; anything else is retrained,
never unpickled.

Queries lose their denied symptoms first (agents.triage.negation: "no chest pain, but my ankles
swell" is classified as "but my ankles swell"); a complaint that only denies things is vague.

Vague detection (a complaint too unspecific to choose from):
  * the model's most probable of its 19 classes is "vague" (the MAP decision), or
  * the specialty distribution is nearly uniform (top < VAGUE_MIN_TOP and normalised entropy
    > VAGUE_MIN_ENTROPY), or
  * no word of the text occurs anywhere in the training vocabulary.
Filler mixed with a real symptom ("I am not feeling well, my knees are swollen") is not vague:
the generator trains on exactly that mix, labelled with the symptom's specialty.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sklearn
from scipy.sparse import diags
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion, Pipeline
from threadpoolctl import threadpool_limits

from agents.triage import cache, cues, kb, lay_lexicon, negation, phrasebook, synth
from gateway.household.model import SPECIALIZATIONS

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
SEED = 0
PER_CONDITION = 30

VAGUE_MIN_TOP = 0.20  # specialty distribution this flat ...
VAGUE_MIN_ENTROPY = 0.90  # ... (normalised entropy above this) carries no usable signal
# Prior: each specialty's probability is multiplied by at most (1 + PRIOR_STRENGTH) and the
# result renormalised. A specialty more than (1 + PRIOR_STRENGTH) times as likely as another can
# therefore never be overtaken: the prior breaks near-ties, it does not override clear signals.
PRIOR_STRENGTH = 0.5
# When the text is vague, the best guess is kept only if it is at least this likely.
VAGUE_GUESS_MIN = 0.35
DEFAULT_SPECIALTY = "general physician"
MATCH_MIN_SIMILARITY = 0.15
N_MATCHED = 3


@dataclass(frozen=True, slots=True)
class TriageResult:
    # Best specialty: never "vague". If vague, the best guess when it is at least
    # VAGUE_GUESS_MIN likely, else "general physician".
    specialty: str
    # Probability of `specialty` among the 18 specialties after combining priors (the model's
    # "vague" probability is spread evenly over all 18, so unspecific texts score low).
    confidence: float
    # All 18 specialties, descending probability (sums to ~1).
    ranked: tuple[tuple[str, float], ...]
    # The text carries too little signal to choose: ask a follow-up question.
    vague: bool
    # Up to 3 KB symptom fragments of `specialty` most similar to the text, for explanations
    # (empty when vague).
    matched: tuple[str, ...]


def normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    return re.sub(r"\s+", " ", text).strip()


def model_key() -> str:
    """Hash of everything the trained model depends on; names the cache file."""
    h = hashlib.sha256()
    h.update(f"format={FORMAT_VERSION};sklearn={sklearn.__version__};".encode())
    for path in (kb.__file__, phrasebook.__file__, lay_lexicon.__file__, synth.__file__, __file__):
        h.update(Path(path or "").read_bytes())
    return h.hexdigest()[:20]


def cache_path(cache_dir: Path) -> Path:
    return cache_dir / f"triage-{model_key()}.joblib"


def _build_pipeline() -> Pipeline:
    features = FeatureUnion(
        [
            (
                "word",
                TfidfVectorizer(
                    ngram_range=(1, 2),
                    sublinear_tf=True,
                    token_pattern=r"(?u)\b\w[\w']*\b",
                    preprocessor=lay_lexicon.lay_expand,
                    dtype=np.float32,
                ),
            ),
            (
                "char",
                TfidfVectorizer(
                    analyzer="char_wb",
                    ngram_range=(2, 5),
                    sublinear_tf=True,
                    min_df=2,
                    preprocessor=lay_lexicon.lay_expand,
                    dtype=np.float32,
                ),
            ),
        ]
    )
    model = LogisticRegression(C=3.0, tol=3e-4, max_iter=300, class_weight="balanced")
    return Pipeline([("features", features), ("clf", model)])


def _unit_rows(m: Any) -> Any:
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return diags(1.0 / norms) @ m


def train() -> dict[str, Any]:
    """Fit the model on the generated training set; returns the state Triage wraps."""
    texts, labels = synth.training_set(seed=SEED, per_condition=PER_CONDITION)
    pipe = _build_pipeline()
    # One BLAS thread: lbfgs on 19 classes gains nothing from threads and oversubscribed
    # cores (other processes, small machines) made training 3x slower.
    with threadpool_limits(limits=1):
        pipe.fit(texts, labels)
    frags = [(s, c.specialty) for c in kb.CONDITIONS for s in c.symptoms]
    fragments = tuple(s for s, _ in frags)
    matrix = _unit_rows(pipe.named_steps["features"].transform([normalise(s) for s in fragments]))
    return {
        "key": model_key(),
        "pipeline": pipe,
        "fragments": fragments,
        "fragment_specialties": tuple(sp for _, sp in frags),
        "fragment_matrix": matrix.tocsr(),
    }


class Triage:
    """Load with Triage.load(); classify(text); for vague text, follow_up(text, asked)."""

    def __init__(self, state: Mapping[str, Any], *, trained: bool) -> None:
        self._pipe: Pipeline = state["pipeline"]
        self._features: FeatureUnion = self._pipe.named_steps["features"]
        self._clf: LogisticRegression = self._pipe.named_steps["clf"]
        self._fragments: tuple[str, ...] = tuple(state["fragments"])
        self._frag_specialties = np.array(state["fragment_specialties"])
        self._frag_matrix: Any = state["fragment_matrix"]
        classes = [str(c) for c in self._pipe.classes_]
        missing = sorted(set(SPECIALIZATIONS) - set(classes))
        if missing or synth.VAGUE not in classes:
            raise ValueError(f"triage model lacks classes {missing or [synth.VAGUE]}")
        if self._frag_matrix.shape[0] != len(self._fragments):
            raise ValueError("triage model fragment matrix does not match its fragments")
        self._spec_idx = np.array([classes.index(s) for s in SPECIALIZATIONS])
        self._vague_idx = classes.index(synth.VAGUE)
        word = self._features.transformer_list[0][1]
        self._vocab: Mapping[str, int] = word.vocabulary_
        self._tokenize = word.build_tokenizer()
        # True when this instance was trained in this process rather than read from the cache.
        self.trained = trained

    @classmethod
    def load(cls, cache_dir: Path | None = None) -> Triage:
        """The model from the cache, training (and caching) it when absent or unreadable.

        The cache file name is a hash of the KB, generator and classifier source, so a stale
        model is never used. Training takes ~10 s; concurrent writers are safe (atomic rename).
        """
        cache_dir = cache_dir if cache_dir is not None else Path.home() / ".cache" / "healthgw"
        path = cache_path(cache_dir)
        try:
            state = cache.load(path)  # None unless owned by us and matching its checksum
            if state is not None:
                if isinstance(state, dict) and state.get("key") == model_key():
                    return cls(state, trained=False)
                log.warning("triage cache %s has unexpected content; retraining", path)
        except Exception as exc:  # a corrupt cache must never crash the caller
            log.warning("triage cache %s unreadable (%s); retraining", path, exc)
        state = train()
        _write_atomically(state, path)
        return cls(state, trained=True)

    # ------------------------------------------------------------------ classification
    def classify(self, text: str, prior: Mapping[str, float] | None = None) -> TriageResult:
        """Best specialty for `text`.

        `prior` (specialty -> non-negative weight, e.g. counts of the person's past complaints)
        is a mild Bayesian boost: each specialty's probability is scaled by
        1 + PRIOR_STRENGTH * weight / max_weight and renormalised. It can break near-ties but
        never overturns a specialty that is more than 1 + PRIOR_STRENGTH times as likely.
        Unknown specialties and non-positive weights are ignored.
        """
        # Denied symptoms ("no chest pain, but ...") are not evidence for their specialty;
        # words shared by organs or by body and mind are read in context first.
        clean = cues.reread(negation.drop_denied(normalise(text)))
        named = cues.weights(clean)
        n = len(SPECIALIZATIONS)
        if not any(tok in self._vocab for tok in self._tokenize(lay_lexicon.lay_expand(clean))):
            spec, vague, features = np.full(n, 1.0 / n), True, None
        else:
            features = self._features.transform([clean])
            p = self._clf.predict_proba(features)[0]
            raw = p[self._spec_idx]
            p_vague = float(p[self._vague_idx])
            # The "vague" class's mass says "could be any of them": spread it evenly, so an
            # unspecific text gets a flat, low-confidence distribution instead of a sharp one
            # renormalised from the few specialties it slightly resembles.
            spec = raw + p_vague / n
            spec = spec / spec.sum()
            vague = p_vague >= float(raw.max()) or _flat(spec)
        if named:
            # A named condition, test or treatment: evidence the classifier reads poorly.
            weight = np.array([named.get(s, 1.0) for s in SPECIALIZATIONS])
            spec = spec * weight / float((spec * weight).sum())
            vague = False
        spec = _apply_prior(spec, prior)
        order = np.argsort(-spec, kind="stable")
        ranked = tuple((SPECIALIZATIONS[i], float(spec[i])) for i in order)
        best, best_p = ranked[0]
        if vague and best_p < VAGUE_GUESS_MIN:
            best = DEFAULT_SPECIALTY
            best_p = float(spec[SPECIALIZATIONS.index(DEFAULT_SPECIALTY)])
        matched = () if vague else self._matches(features, best)
        return TriageResult(best, best_p, ranked, vague, matched)

    def _matches(self, features: Any, specialty: str) -> tuple[str, ...]:
        """Up to N_MATCHED fragments of `specialty` most similar to the text (cosine on the
        model's own features): what in the KB the complaint resembles, for explanations."""
        sims = np.asarray((self._frag_matrix @ _unit_rows(features).T).todense()).ravel()
        sims[self._frag_specialties != specialty] = -1.0
        top = np.argsort(-sims, kind="stable")[:N_MATCHED]
        return tuple(self._fragments[i] for i in top if sims[i] >= MATCH_MIN_SIMILARITY)

    # ------------------------------------------------------------------ follow-ups
    def follow_up(self, text: str, asked: Sequence[str]) -> str | None:
        """Next clarifying question (from kb.FOLLOW_UPS, in topic order) for a vague complaint.

        Skips questions already in `asked` (compared case-insensitively) and topics the text
        already answers (a body part mentioned -> no "where"; a duration -> no "when").
        None when out of questions: the caller should then book a general physician.
        """
        clean = normalise(text)
        done = {normalise(q) for q in asked}
        answered = {topic for topic, rx in _ANSWERED.items() if rx.search(clean)}
        for topic, questions in kb.FOLLOW_UPS.items():
            if topic in answered:
                continue
            for q in questions:
                if normalise(q) not in done:
                    return q
        return None


_ANSWERED: dict[str, re.Pattern[str]] = {
    "where": re.compile(
        r"\b(head|chest|stomach|tummy|belly|abdomen|back|neck|shoulders?|arms?|hands?|"
        r"fingers?|legs?|knees?|feet|foot|toes?|hips?|skin|eyes?|ears?|nose|throat|mouth|"
        r"teeth|joints?|heart|lungs?|bladder|kidneys?|breasts?|face|jaw|wrists?|ankles?|"
        r"elbows?|scalp|hair|groin|pelvis)\b"
    ),
    "when": re.compile(
        r"\b(since|for (the )?(past|last)|days?|weeks?|months?|years?|yesterday|today|"
        r"this morning|last night|started)\b"
    ),
}


def _flat(spec: np.ndarray) -> bool:
    entropy = -float(np.sum(spec * np.log(np.clip(spec, 1e-12, 1.0)))) / math.log(len(spec))
    return float(spec.max()) < VAGUE_MIN_TOP and entropy > VAGUE_MIN_ENTROPY


def _apply_prior(spec: np.ndarray, prior: Mapping[str, float] | None) -> np.ndarray:
    if not prior:
        return spec
    w = np.array([float(prior.get(s, 0.0)) for s in SPECIALIZATIONS])
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    if w.max() <= 0:
        return spec
    boosted = spec * (1.0 + PRIOR_STRENGTH * w / w.max())
    return np.asarray(boosted / boosted.sum())


def _write_atomically(state: Mapping[str, Any], path: Path) -> None:
    try:
        cache.save(state, path)
    except OSError as exc:
        log.warning("could not write triage cache %s (%s); using the in-memory model", path, exc)
