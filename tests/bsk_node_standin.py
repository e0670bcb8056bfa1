"""A stand-in for the public ROS 2 bridge node (DISCOWER/bsk-ros2-bridge, BskRosBridge) with
its real socket behaviour, as measured against its code (commit 7e4ae85) under stand-ins for
rclpy and bsk_msgs. Written from those observations; it contains none of its code.

* Sockets: telemetry SUB connects to the simulator's PUB; its CONFLATE/RCVHWM options come
  after `connect()`, where libzmq ignores them, so it **does not conflate**: a listener thread
  moves every frame into an unbounded queue, which the "ROS thread" (a 1 ms timer) drains in
  order. The command PUB (SNDHWM 50) and heartbeat PUB (SNDHWM 1) are bound; a bare
  `{"msg": "ping"}` every 0.1 s.
* Dispatch per frame, in this order: `topic_request` -> a confirmation echoing request_id, only
  when `msg_type` is a bsk_msgs type (unknown types get no answer at all; a request for an
  input topic it already has is confirmed again); `clock_reset` -> clock set to its sim_time
  and accelFactor, acknowledged; **any other frame with a `sim_time` field** -> a clock update
  (`accelFactor` missing: 1.0); else telemetry, published when `msg_type` is a bsk_msgs type
  (dropped otherwise).
* `/clock` at 1 kHz wall: advanced by wall time x accelFactor since the last tick, published
  only when not behind the last published value, as whole seconds + truncated nanoseconds.
* Commands: {namespace, msg_type, timestamp (ns), stamp {sec, nanosec}, <lowercase fields>},
  no topic_name.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque

import zmq

BSK_TYPES = {
    "SCStatesMsgPayload",
    "HillRelStateMsgPayload",
    "AttGuidMsgPayload",
    "CmdForceBodyMsgPayload",
    "CmdTorqueBodyMsgPayload",
    "THRArrayCmdForceMsgPayload",
    "ArrayMotorTorqueMsgPayload",
}
"""The bsk_msgs types orbitlab uses (bsk_msgs defines these and ~115 more; no Orbitlab* ones)."""


class NodeStandIn:
    """Run with `start(telemetry_endpoint)`, stop with `close()`; `consume_hz` > 0 slows the
    ROS thread to that many frames per second (a node that cannot keep up)."""

    def __init__(self, consume_hz: float = 0.0):
        self.context = zmq.Context()
        self.commands = self.context.socket(zmq.PUB)
        self.commands.setsockopt(zmq.LINGER, 0)
        self.commands.setsockopt(zmq.SNDHWM, 50)
        self.commands.setsockopt(zmq.IMMEDIATE, 1)
        self.command_port = self.commands.bind_to_random_port("tcp://127.0.0.1")
        self.heartbeat = self.context.socket(zmq.PUB)
        self.heartbeat.setsockopt(zmq.LINGER, 0)
        self.heartbeat.setsockopt(zmq.SNDHWM, 1)
        self.heartbeat_port = self.heartbeat.bind_to_random_port("tcp://127.0.0.1")
        self.consume_hz = consume_hz
        self.pinging = True
        self.queue: deque[dict] = deque()
        self.max_queue = 0
        """Most frames waiting in the node (its unbounded queue) at any time."""
        self.events: list[tuple[str, dict]] = []
        """('request' | 'clock_reset' | 'clock' | 'telemetry' | 'dropped', frame) in order."""
        self.published: dict[str, list[dict]] = {}
        """ROS topic -> messages published on it."""
        self.confirmed: list[str] = []
        self.clock_samples: list[tuple[float, float]] = []
        """(wall s, /clock s) of every /clock published."""
        self.sim_time, self.accel, self._last_published = 0.0, 1.0, 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, telemetry_endpoint: str) -> None:
        self.telemetry = self.context.socket(zmq.SUB)
        self.telemetry.connect(telemetry_endpoint)
        self.telemetry.setsockopt(zmq.SUBSCRIBE, b"")
        self.telemetry.setsockopt(zmq.RCVTIMEO, 100)
        for target in (self._listen, self._ros_thread, self._ping):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    # -------------------------------------------------------------- threads
    def _ping(self) -> None:
        while not self._stop.wait(0.1):
            if self.pinging:
                try:
                    self.heartbeat.send(b'{"msg":"ping"}', zmq.NOBLOCK)
                except zmq.Again:
                    pass

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                data = json.loads(self.telemetry.recv())
            except zmq.Again:
                continue
            except (zmq.ZMQError, ValueError):
                continue
            if isinstance(data, dict):
                with self._lock:
                    self.queue.append(data)
                    self.max_queue = max(self.max_queue, len(self.queue))

    def _ros_thread(self) -> None:
        last = time.monotonic()
        budget = 0.0
        while not self._stop.is_set():
            time.sleep(0.001)
            now = time.monotonic()
            # /clock: wall time x accelFactor since the last timer tick
            self.sim_time += (now - last) * self.accel
            if self.sim_time >= self._last_published:
                self._last_published = self.sim_time
                whole = int(self.sim_time)  # published as sec + nanosec, truncated
                published = whole + int((self.sim_time - whole) * 1e9) * 1e-9
                self.clock_samples.append((now, published))
            budget = budget + (now - last) * self.consume_hz if self.consume_hz else 0.0
            last = now
            while True:
                if self.consume_hz and budget < 1.0:
                    break
                with self._lock:
                    if not self.queue:
                        break
                    data = self.queue.popleft()
                budget -= 1.0
                self._dispatch(data)

    def _dispatch(self, data: dict) -> None:
        if data.get("topic_request", False):
            self.events.append(("request", data))
            if data.get("msg_type") in BSK_TYPES and data.get("request_id"):
                self.confirmed.append(data["request_id"])
                keys = ("namespace", "msg_type", "topic_name", "direction", "request_id")
                self._send(
                    {"topic_confirmation": True, **{k: data[k] for k in keys}, "success": True}
                )
        elif data.get("clock_reset", False):
            self.events.append(("clock_reset", data))
            self.sim_time = self._last_published = float(data.get("sim_time", 0.0))
            self.accel = float(data.get("accelFactor", 1.0))
            self._send(
                {"clock_reset_ack": True, "sim_time": self.sim_time, "accelFactor": self.accel}
            )
        elif "sim_time" in data:
            self.events.append(("clock", data))
            self.sim_time = float(data["sim_time"])
            self.accel = float(data.get("accelFactor", 1.0))
        elif data.get("msg_type") in BSK_TYPES:
            self.events.append(("telemetry", data))
            topic = f"/{data.get('namespace', 'default')}/bsk/out/{data.get('topic_name')}"
            self.published.setdefault(topic, []).append(data)
        else:
            self.events.append(("dropped", data))

    # ------------------------------------------------------------- commands
    def send(self, namespace: str, msg_type: str, **fields) -> None:
        now = time.time_ns()
        self._send(
            {
                "namespace": namespace,
                "msg_type": msg_type,
                "timestamp": now,
                "stamp": {"sec": now // 10**9, "nanosec": now % 10**9},
                **fields,
            }
        )

    def _send(self, message: dict) -> None:
        try:
            self.commands.send(json.dumps(message).encode(), zmq.NOBLOCK)
        except zmq.Again:
            pass

    def clock_slope(self, since_wall: float) -> float:
        """Least-squares d(/clock)/d(wall) of the samples after `since_wall`."""
        pts = [(w, c) for w, c in self.clock_samples if w >= since_wall]
        n = len(pts)
        mw, mc = sum(w for w, _ in pts) / n, sum(c for _, c in pts) / n
        num = sum((w - mw) * (c - mc) for w, c in pts)
        return num / sum((w - mw) ** 2 for w, _ in pts)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2.0)
        self.context.destroy(linger=0)
