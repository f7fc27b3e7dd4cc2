"""The local store: readings, events, audit rows and SOS trajectories in SQLite (WAL).

`Store` is the interface. Its parts, each one job:
- schema.py: tables, columns, SQL and row formats;
- writer.py: the hot path (a bounded queue) and the writer thread, durability tickets;
- commit.py: rows into transactions, retries, dead letters for refused rows;
- spill.py: spill files when the queue is full, replay in order, the rescue at stop;
- latest.py: the newest reading per device, in memory;
- queries.py: the read side for the API, the monitor and the reports;
- retention.py: deleting old rows in short chunks.
"""

from gateway.store.writer import Store

__all__ = ["Store"]
