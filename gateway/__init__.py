"""The gateway library: MQTT in, validated at the edge, monitored, turned into events and
acted on (escalation, notifications, storage, Home Assistant, the API). It never imports
agents/ or simulators/."""
