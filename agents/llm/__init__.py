"""The local language model: a supervised worker process, grammar-constrained output and
stats. It works in language only; code decides control flow and which tools are allowed."""
