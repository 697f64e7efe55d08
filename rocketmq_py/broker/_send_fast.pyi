"""Typed API of the compiled send fast path (``_send_fast.pyx``); the pure-Python twin ``_send_fast_py`` matches it."""
from typing import Sequence

from rocketmq_py.broker.processors.send import SendMessageProcessor
from rocketmq_py.remoting import RemotingCommand, RequestContext

IMPLEMENTATION: str

class SendFastPath:
    def __init__(self, processor: SendMessageProcessor) -> None: ...
    def answer(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None: ...
    def build(self, remote_address: object,
              request: RemotingCommand) -> tuple[bytes | bytearray, int, str, int] | None: ...
    def respond(self, request: RemotingCommand, queue_id: int, physical_offsets: Sequence[int],
                queue_offset: int) -> RemotingCommand: ...
