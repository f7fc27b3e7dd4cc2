"""The words of the "are you OK?" questions the escalation watcher asks on the watch
(gateway/escalation/watcher.py keeps the countdown; these only say it). What an implausible reading
reads as comes from gateway/monitor/wording.implausible_words, in words and units."""

from __future__ import annotations

from gateway.contract.vital_words import user_text, words_only


def _then(window_s: float, on_no_answer: str) -> str:
    within = f"If you don't answer within {window_s:.0f} seconds"
    if on_no_answer == "hard_sos":
        return f" {within} we will call for help."
    if on_no_answer == "contacts":
        return f" {within} we will text your emergency contacts."
    return ""


@user_text
def alert_question(window_s: float, on_no_answer: str) -> str:
    """After an alert: the wearer is asked; what happens without an answer is said."""
    return "Are you OK? Your vitals look abnormal. Press OK on your watch if you are fine." + _then(
        window_s, on_no_answer
    )


@user_text
def implausible_question(what: str, window_s: float, on_no_answer: str) -> str:
    """A possible but implausible value ("heart rate as 0 bpm"): a loose strap, or an arrest."""
    then = _then(window_s, on_no_answer) or _then(window_s, "contacts")
    return (
        f"Your device reads your {words_only(what)}, which may mean it cannot measure you. "
        f"Are you OK? Press OK if you are fine.{then}"
    )


@user_text
def unconfirmed_question(what: str, window_s: float, on_no_answer: str) -> str:
    """One wrist reading in the intervention range ("oxygen saturation as 82%"), before the
    next readings confirm or refute it."""
    then = _then(window_s, on_no_answer) or _then(window_s, "contacts")
    return f"Your watch reads your {words_only(what)}. Are you OK? Press OK if you are fine.{then}"


@user_text
def fall_question(window_s: float) -> str:
    return (
        "A fall was detected. Are you OK? Press OK, or move, within "
        f"{window_s:.0f} seconds, or we will call for help."
    )
