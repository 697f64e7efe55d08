"""Our blocking ``Producer`` sending keyed messages in a thread, as an application that must not lose one
does: a send that raised is sent again (the same message, the same key ``<prefix><i>``) with the same
producer object, never reconfigured. A failover test runs it across a ``kill -9`` of the master.

    sends = KeyedSends(producer, topic, "py-")
    sends.start()
    sends.wait_acked(100)               # blocks until 100 keys were acknowledged (raises if the thread died)
    sends.stop()                        # ends after the send in progress; .acked, .failures, .crash
"""
from __future__ import annotations

import threading
from collections import Counter

from rocketmq_py import Message, Producer
from rocketmq_py.errors import RocketMQError

#: After a failed send the application pauses this long before it sends again, so that, while the master is
#: dead, it does not spin on a core that the election needs (a pause, not something the test waits for).
RETRY_PAUSE_S = 0.05


class KeyedSends(threading.Thread):
    def __init__(self, producer: Producer, topic: str, prefix: str, body_size: int = 64) -> None:
        super().__init__(name=f"keyed-sends-{prefix}", daemon=True)
        self.producer = producer
        self.topic = topic
        self.prefix = prefix
        self.body = b"x" * body_size
        self.acked: list[str] = []
        self.failures: Counter[str] = Counter()
        self.crash: BaseException | None = None
        self._stopping = threading.Event()
        self._changed = threading.Condition()

    def run(self) -> None:
        try:
            index = 0
            while not self._stopping.is_set():
                key = f"{self.prefix}{index}"
                try:
                    self.producer.send(Message(self.topic, self.body, keys=key))
                except RocketMQError as error:
                    self.failures[type(error).__name__] += 1
                    self._stopping.wait(RETRY_PAUSE_S)
                    continue
                with self._changed:
                    self.acked.append(key)
                    self._changed.notify_all()
                index += 1
        except BaseException as error:  # reported by wait_acked and checked by the test
            self.crash = error
        finally:
            with self._changed:
                self._changed.notify_all()

    def acked_count(self) -> int:
        with self._changed:
            return len(self.acked)

    def wait_acked(self, count: int, deadline_s: float = 120.0) -> int:
        """Block until ``count`` keys were acknowledged; the count then. Raises if the thread ended first, or
        when ``deadline_s`` passed (a bound for a broken group, not a measure)."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.acked) >= count or not self.is_alive(), deadline_s)
            if len(self.acked) < count:
                raise AssertionError(f"our producer stopped after {len(self.acked)} acknowledged sends "
                                     f"(failures {dict(self.failures)}): {self.crash!r}")
            return len(self.acked)

    def stop(self) -> None:
        self._stopping.set()
        self.join()
        if self.crash is not None:
            raise AssertionError(f"our producer's thread failed: {self.crash!r}") from self.crash
