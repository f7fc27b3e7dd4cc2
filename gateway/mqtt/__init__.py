"""The broker link: two persistent sessions (control, and vitals), an explicit reconnect
loop, QoS 1 acknowledged only once stored, backpressure before shedding, and the bounded
queues in and out. The runtime uses `link.MqttLink`; the rest is the link's own.

- link: the link and its reconnect loop; sessions: the two sessions and what they share;
- acks: acknowledge a QoS 1 message once durable; backlog: backpressure and when to shed;
- inbound_queue / outbound_queue: the bounded queues each way.
"""

__all__ = ["link"]
