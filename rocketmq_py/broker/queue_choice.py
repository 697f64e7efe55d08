"""The queue the broker picks when a request leaves the choice to it (a send with a negative queue id, a
retry or dead-letter topic): Java's ``ThreadLocalRandom.nextInt(99999999) % queueNums`` in
``AbstractSendMessageProcessor`` and ``SendMessageProcessor``.

Shared by the send processor, the reply processor and the send fast path, so that a fast path does not
import a processor.
"""
from __future__ import annotations

import random

__all__ = ["random_queue_id"]


def random_queue_id(queue_nums: int) -> int:
    """A queue id in ``[0, queue_nums)`` (0 when the topic has no queues)."""
    return random.randrange(99999999) % queue_nums if queue_nums > 0 else 0
