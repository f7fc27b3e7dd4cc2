"""Replay: a recorded or generated trace through the assembled gateway on a virtual clock
(`healthgw replay`). `trace` reads and checks the JSON lines, `hub` is the gateway on a
hand-moved clock (also the clinical scenarios' engine), `run` replays and counts the burden
per person, `report` prints it."""
