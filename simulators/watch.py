"""One simulated watch: its own MQTT connection with a last will, like a real device.

The will is a retained `offline` on the device's status topic, so the broker itself tells the
gateway when the watch vanishes (crash, flat battery, lost Wi-Fi). On connect the watch
announces a retained `online`. Everything is QoS 1.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from pydantic import ValidationError

from gateway.contract.topics import (
    QOS,
    STATUS_OFFLINE,
    STATUS_ONLINE,
    AckPayload,
    NotifyPayload,
    SosPayload,
    VitalsPayload,
    ack_topic,
    format_ts,
    notify_topic,
    sos_topic,
    status_topic,
    vitals_topic,
)
from simulators.vitals import VitalsModel

NotifyCallback = Callable[["Watch", NotifyPayload], None]
EchoCallback = Callable[[str, str], None]  # (topic, payload) of every publish


class Watch:
    def __init__(
        self,
        person: str,
        device: str,
        model: VitalsModel,
        broker_host: str = "127.0.0.1",
        port: int = 1883,
        *,
        username: str | None = None,
        password: str | None = None,
        client_id: str | None = None,
        tls: bool = False,
        keepalive: int = 30,
        on_notify: NotifyCallback | None = None,
        auto_answer: bool | None = None,
        echo: EchoCallback | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`auto_answer`: if not None, answer every `prompt` notification with ack(ok=...)."""
        self.person = person
        self.device = device
        self.model = model
        self.host = broker_host
        self.port = port
        self.client_id = client_id or f"watch-{person}-{device}"[:64]
        self.on_notify = on_notify
        self.auto_answer = auto_answer
        self.notifications: list[NotifyPayload] = []
        self.published = 0  # vitals readings
        self.invalid_notifications = 0
        self._username, self._password, self._tls = username, password, tls
        self._keepalive = keepalive
        self._echo = echo
        self._clock = clock
        self._cond = threading.Condition()
        self._lock = threading.Lock()  # _pending is appended from the network thread too
        self._connack = threading.Event()
        self._subscribed = threading.Event()
        self._connected = threading.Event()
        self._connect_error: str | None = None
        self._pending: list[mqtt.MQTTMessageInfo] = []
        self._client: mqtt.Client | None = None

    # --- connection ------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def connect(self, timeout: float = 10.0) -> None:
        """Connect and start the network thread; returns once the broker accepted us and
        the notify subscription is active (so no prompt sent afterwards is missed)."""
        client = mqtt.Client(
            callback_api_version=CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            protocol=mqtt.MQTTv311,
        )
        if self._username is not None:
            client.username_pw_set(self._username, self._password)
        if self._tls:
            client.tls_set()
        client.will_set(status_topic(self.person, self.device), STATUS_OFFLINE, QOS, retain=True)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe
        self._client = client
        self._connect_error = None
        self._connack.clear()
        self._subscribed.clear()
        client.connect(self.host, self.port, self._keepalive)
        client.loop_start()
        ready = self._connack.wait(timeout) and self._subscribed.wait(timeout)
        if not ready or self._connect_error:
            self._client = None
            client.loop_stop()
            client.disconnect()
            raise ConnectionError(
                f"{self.client_id}: broker {self.host}:{self.port} refused or did not answer"
                f" ({self._connect_error or 'timeout'})"
            )

    def disconnect(self, clean: bool = True, timeout: float = 5.0) -> None:
        """clean: publish `offline`, flush, then DISCONNECT (the broker drops the will).
        not clean: drop the TCP connection as a crash would, so the broker fires the will."""
        client = self._client
        if client is None:
            return
        if clean:
            self._publish(status_topic(self.person, self.device), STATUS_OFFLINE, retain=True)
            self.flush(timeout)
        self._client = None
        if clean:
            client.disconnect()
            client.loop_stop()
        else:
            client.loop_stop()
            sock = client.socket()
            if isinstance(sock, socket.socket):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self._connected.clear()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every QoS 1 publish so far is acknowledged; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            pending, self._pending = self._pending, []
        for info in pending:
            try:
                info.wait_for_publish(max(0.0, deadline - time.monotonic()))
            except (RuntimeError, ValueError):
                return False  # not connected / queue refused: it will never be acknowledged
            if not info.is_published():
                return False
        return True

    # --- what the wearer's device sends -------------------------------------------------------

    def publish_reading(self, ts: float | None = None) -> dict[str, Any] | None:
        """Publish the model's next reading; None once the battery is flat.

        The reading that takes the battery to 0 is the last: the watch then drops off the
        network without a goodbye, so the broker publishes its will."""
        if not self.model.alive:
            return None
        payload = self.model.next(self._clock() if ts is None else ts)
        self._publish(vitals_topic(self.person, self.device), payload)
        self.published += 1
        if not self.model.alive:
            self.flush()
            self.disconnect(clean=False)
        return payload

    def press_sos(self, location: dict[str, float] | None = None) -> dict[str, Any]:
        loc = location if location is not None else self.model.location()
        payload: dict[str, Any] = {"action": "start", "ts": format_ts(self._clock())}
        if loc is not None:
            payload["location"] = loc
        return self._send(sos_topic(self.person, self.device), SosPayload, payload)

    def end_sos(self) -> dict[str, Any]:
        payload = {"action": "end", "ts": format_ts(self._clock())}
        return self._send(sos_topic(self.person, self.device), SosPayload, payload)

    def ack(
        self, ok: bool = True, prompt_id: str | None = None, answer: str | None = None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {"ok": ok, "ts": format_ts(self._clock())}
        if prompt_id is not None:
            payload["prompt_id"] = prompt_id
        if answer is not None:
            payload["answer"] = answer
        return self._send(ack_topic(self.person, self.device), AckPayload, payload)

    # --- what the gateway sends back --------------------------------------------------------------

    def wait_for_notification(
        self, kind: str | None = None, timeout: float = 5.0
    ) -> NotifyPayload | None:
        """The first notification (of `kind`) received so far or within `timeout`."""

        def find() -> NotifyPayload | None:
            return next((n for n in self.notifications if kind in (None, n.kind)), None)

        with self._cond:
            self._cond.wait_for(lambda: find() is not None, timeout)
            return find()

    # --- internals -------------------------------------------------------------------------------

    def _send(
        self, topic: str, model: type[VitalsPayload | SosPayload | AckPayload], payload: Any
    ) -> dict[str, Any]:
        model.model_validate(payload)  # never put an off-contract message on the wire
        self._publish(topic, payload)
        return dict(payload)

    def _publish(self, topic: str, payload: dict[str, Any] | str, retain: bool = False) -> None:
        client = self._client
        if client is None:
            raise ConnectionError(f"{self.client_id} is not connected")
        text = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
        info = client.publish(topic, text, QOS, retain)
        with self._lock:
            self._pending.append(info)
            if len(self._pending) > 1000:  # keep only what is still in flight
                self._pending = [i for i in self._pending if not i.is_published()]
        if self._echo is not None:
            self._echo(topic, text)

    def _on_connect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: Any,
        reason_code: Any,
        properties: Any,
    ) -> None:
        if reason_code.is_failure:
            self._connect_error = str(reason_code)
            self._subscribed.set()  # nothing more will come: let connect() fail now
        else:
            # Announce on every (re)connect: the will may have marked us offline meanwhile.
            client.publish(status_topic(self.person, self.device), STATUS_ONLINE, QOS, True)
            client.subscribe(notify_topic(self.person), QOS)
            self._connected.set()
        self._connack.set()

    def _on_subscribe(
        self, client: mqtt.Client, userdata: Any, mid: int, reason_codes: Any, properties: Any
    ) -> None:
        self._subscribed.set()

    def _on_disconnect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any
    ) -> None:
        self._connected.clear()

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        try:
            note = NotifyPayload.model_validate_json(msg.payload)
        except ValidationError:
            self.invalid_notifications += 1
            return
        with self._cond:
            self.notifications.append(note)
            self._cond.notify_all()
        if self.on_notify is not None:
            self.on_notify(self, note)
        if self.auto_answer is not None and note.kind == "prompt":
            self.ack(ok=self.auto_answer, prompt_id=note.prompt_id)
