"""What the broker sends to the name servers (Java's broker/out/BrokerOuterAPI).

REGISTER_BROKER goes to every name server at once (in parallel), with the
topic table as RegisterBrokerBody (zlib-compressed when ``compressedRegister``)
and the body's CRC32 in the header; UNREGISTER_BROKER at shutdown. A name
server that does not answer is logged and skipped; it sees the broker again
at the next registration.
"""
from __future__ import annotations

import asyncio
import logging
import zlib
from dataclasses import dataclass

from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.namesrv import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from rocketmq_py.common.kv import KVTable
from rocketmq_py.common.topic_config import TopicConfigSerializeWrapper
from rocketmq_py.namesrv.register_body import RegisterBrokerBody
from rocketmq_py.remoting import RemotingClient, create_request

_log = logging.getLogger(__name__)


@dataclass
class RegisterBrokerResult:
    namesrv_addr: str
    ha_server_addr: str | None = None
    master_addr: str | None = None
    kv_table: KVTable | None = None


class BrokerOuterAPI:
    def __init__(self, remoting: RemotingClient | None = None) -> None:
        self.remoting = remoting or RemotingClient()
        #: When each name server last confirmed a registration (epoch ms), for the health check.
        self.last_registered_ms: dict[str, int] = {}

    async def register_broker_all(self, namesrv_addrs: list[str], cluster_name: str, broker_addr: str,
                                  broker_name: str, broker_id: int, ha_server_addr: str,
                                  wrapper: TopicConfigSerializeWrapper, timeout_ms: int, compressed: bool = False,
                                  oneway: bool = False) -> list[RegisterBrokerResult]:
        body = RegisterBrokerBody(wrapper).encode(compressed)
        header = RegisterBrokerRequestHeader(
            broker_name=broker_name, broker_addr=broker_addr, cluster_name=cluster_name,
            ha_server_addr=ha_server_addr, broker_id=broker_id, compressed=compressed,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
        )
        calls = [self._register(addr, header, body, timeout_ms, oneway) for addr in namesrv_addrs]
        results = await asyncio.gather(*calls)
        return [result for result in results if result is not None]

    async def _register(self, addr: str, header: RegisterBrokerRequestHeader, body: bytes, timeout_ms: int,
                        oneway: bool) -> RegisterBrokerResult | None:
        request = create_request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)
        try:
            if oneway:
                await self.remoting.invoke_oneway(addr, request, timeout_ms)
                return None
            response = await self.remoting.invoke(addr, request, timeout_ms)
        except Exception as error:
            _log.warning("registering with the name server %s failed: %s", addr, error)
            return None
        if response.code != ResponseCode.SUCCESS:
            _log.warning("the name server %s refused the registration: code %d, %s", addr, response.code,
                         response.remark)
            return None
        answer = RegisterBrokerResponseHeader.from_command(response)
        kv_table = None
        if response.body:
            try:
                kv_table = KVTable.decode(response.body)
            except ValueError as error:
                _log.warning("the name server %s answered an unreadable KV table: %s", addr, error)
        _log.debug("registered with the name server %s", addr)
        self.last_registered_ms[addr] = now_ms()
        return RegisterBrokerResult(addr, answer.ha_server_addr, answer.master_addr, kv_table)

    async def unregister_broker_all(self, namesrv_addrs: list[str], cluster_name: str, broker_addr: str,
                                    broker_name: str, broker_id: int, timeout_ms: int = 3000) -> None:
        header = UnRegisterBrokerRequestHeader(broker_name=broker_name, broker_addr=broker_addr,
                                               cluster_name=cluster_name, broker_id=broker_id)

        async def unregister(addr: str) -> None:
            request = create_request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields())
            try:
                response = await self.remoting.invoke(addr, request, timeout_ms)
                if response.code != ResponseCode.SUCCESS:
                    _log.warning("the name server %s refused the unregistration: %s", addr, response.remark)
                else:
                    _log.info("unregistered from the name server %s", addr)
            except Exception as error:
                _log.warning("unregistering from the name server %s failed: %s", addr, error)

        await asyncio.gather(*(unregister(addr) for addr in namesrv_addrs))

    async def shutdown(self) -> None:
        await self.remoting.shutdown()
