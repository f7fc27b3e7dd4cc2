"""The typed tools agents act through: declared with their argument models, risk and PHI
rules, registered once and audited on every call."""
