"""What the agents keep that holds PHI, registered with the gateway's retention sweep.

Live rows are kept up to twice the retention period: an open SOS run, a ladder still
waiting, an active or proposed prescription, a dose still due.
"""

from __future__ import annotations

from pathlib import Path

from gateway.base.db import Database
from gateway.base.retention import Retention


def register_agents(r: Retention, *, db: Database, safety_db: Database, data_dir: Path) -> None:
    # SOS journal and ladder (safety.db).
    r.add_table(safety_db, "sos_runs", "updated_at", keep_while="state = 'open'")
    r.add_table(safety_db, "sos_ladder", "created_at", keep_while="state = 'waiting'")
    # Long-term memory: what people said and booked.
    r.add_table(db, "complaints", "created_at")
    # A booking made longer ago than the retention period is in the past (slots are offered
    # weeks ahead at most), so it goes like the rest: no keep_while.
    r.add_table(db, "bookings", "created_at")
    r.add_table(db, "appointment_history", "created_at")
    r.add_table(db, "follow_ups", "created_at")
    r.add_table(db, "follow_up_sent", "sent_at")
    # Open conversations: a row is deleted when its conversation ends; one left behind (the
    # assistant switched off since) goes with the rest.
    r.add_table(db, "conversations", "updated_at")
    # Medication: the record of intakes and doses; prescriptions only once stopped.
    r.add_table(db, "intakes", "ts")
    r.add_table(db, "doses", "scheduled", keep_while="status IN ('pending', 'snoozed')")
    r.add_table(db, "prescriptions", "created_at", keep_while="status IN ('proposed', 'active')")
    r.add_table(db, "rx_prompts", "asked_at")  # the person's yes / no to a proposal
    # Daily reports: reports/<person>/<day>/<file>.
    r.add_files(data_dir / "reports", "*/*/*")
