"""The broker's request lanes (Java's sendMessageExecutor and pullMessageExecutor queues, and BrokerFastFailure).

Sends and pulls are the bulk of a broker's work. Each family waits in its
own lane, shared by the main and the fast channel as Java shares its
executors, so admin, offset, heartbeat and query requests are served as
soon as they are read and never wait behind a backlog of sends. A send
that waited longer than ``waitTimeMillsInSendQueue`` (a pull:
``waitTimeMillsInPullQueue``) is answered SYSTEM_BUSY, and while the page
cache is busy queued sends are too, so clients go to another broker.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py.common.codes import RequestCode
from rocketmq_py.remoting import Lane, ProcessorTable

if TYPE_CHECKING:
    from rocketmq_py.broker.config import BrokerConfig
    from rocketmq_py.store import MessageStore

SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
              RequestCode.CONSUMER_SEND_MSG_BACK)
PULL_CODES = (RequestCode.PULL_MESSAGE,)
#: Sends in progress at once: more than one so that, under SYNC_FLUSH, many wait for the same group commit.
SEND_WORKERS = 64
#: Pulls in progress at once (a pull that finds nothing is parked by long polling and frees its worker).
PULL_WORKERS = 16
#: Requests started per pass of the event loop: a few milliseconds of work at most, so other requests wait
#: little, while the answers of a pass still share one write per connection.
SEND_BURST = 64
PULL_BURST = 32


class BrokerLanes:
    def __init__(self, config: BrokerConfig, store: MessageStore) -> None:
        self.config = config
        self.store = store
        self.send = Lane("send", capacity=config.send_thread_pool_queue_capacity, workers=SEND_WORKERS,
                         burst=SEND_BURST)
        self.pull = Lane("pull", capacity=config.pull_thread_pool_queue_capacity, workers=PULL_WORKERS,
                         burst=PULL_BURST)
        self.refresh()

    def refresh(self) -> None:
        """Apply the settings again (after UPDATE_BROKER_CONFIG)."""
        config = self.config
        fast_failure = config.broker_fast_failure_enable
        self.send.capacity = max(1, config.send_thread_pool_queue_capacity)
        self.pull.capacity = max(1, config.pull_thread_pool_queue_capacity)
        self.send.max_wait_ms = config.wait_time_mills_in_send_queue if fast_failure else None
        self.pull.max_wait_ms = config.wait_time_mills_in_pull_queue if fast_failure else None
        self.send.busy = self.store.is_os_page_cache_busy if fast_failure else None

    def assign(self, table: ProcessorTable) -> None:
        """Route the send and pull codes registered in ``table`` through their lanes."""
        for codes, lane in ((SEND_CODES, self.send), (PULL_CODES, self.pull)):
            for code in codes:
                if code in table:
                    table.set_lane(code, lane)
