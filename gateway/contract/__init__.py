"""The contract: what devices, agents and every part of the gateway agree on, and the only
part of gateway/ that simulators may import.

- topics: the MQTT wire contract, one table of topics and payload types;
- vitals: the one table of vitals (names, units, impossible values, NEWS2 parameters);
- vital_words: vital values in words and units, for every text a person reads;
- device_kinds: the device kinds a household may name and what each measures;
- values: the typed, frozen values that flow after edge validation;
- events: typed payloads of the events parts act on; response: the decision an event carries.
"""

__all__ = ["device_kinds", "events", "response", "topics", "values", "vital_words", "vitals"]
