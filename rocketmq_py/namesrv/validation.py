"""A broker registration is checked whole before the route tables see any of it.

The header's numbers are already typed by the header mapping and the body's
JSON by its shape (:mod:`rocketmq_py.common.json_shape`); this adds what the
route tables rely on: a broker id that is a broker id, addresses that are
``host:port``, named topics with sane queue counts, and a filter server list
of addresses. Anything else raises :class:`BadRequestError` naming the part.
"""
from __future__ import annotations

from typing import Iterable

from rocketmq_py.common.headers.namesrv import RegisterBrokerRequestHeader
from rocketmq_py.common.topic_config import TopicConfigSerializeWrapper
from rocketmq_py.errors import BadRequestError

#: The largest queue count a topic config may declare (Java caps creation far lower; this only stops garbage).
MAX_QUEUE_NUMS = 1 << 16


def validate_registration(header: RegisterBrokerRequestHeader, wrapper: TopicConfigSerializeWrapper,
                          filter_servers: Iterable[str] | None) -> None:
    """Raises :class:`BadRequestError` when any part of the registration cannot go into the route tables."""
    if header.broker_id < 0:
        raise BadRequestError(f"brokerId {header.broker_id} is negative", "brokerId")
    for field, value in (("brokerName", header.broker_name), ("clusterName", header.cluster_name)):
        if not value.strip():
            raise BadRequestError(f"{field} is blank", field)
    _check_address(header.broker_addr, "brokerAddr")
    if header.ha_server_addr:
        _check_address(header.ha_server_addr, "haServerAddr")
    for name, config in wrapper.topic_config_table.items():
        where = f"topicConfigTable.{name}"
        if not config.topic_name:
            raise BadRequestError(f"{where} has no topicName", where)
        for what, count in (("readQueueNums", config.read_queue_nums), ("writeQueueNums", config.write_queue_nums)):
            if not 0 <= count <= MAX_QUEUE_NUMS:
                raise BadRequestError(f"{where}.{what} {count} is outside 0..{MAX_QUEUE_NUMS}", f"{where}.{what}")
        if config.perm < 0:
            raise BadRequestError(f"{where}.perm {config.perm} is negative", f"{where}.perm")
    for index, address in enumerate(filter_servers or ()):
        _check_address(address, f"filterServerList[{index}]")


def _check_address(address: str, field: str) -> None:
    host, _, port = address.rpartition(":")
    if not host or not port.isdecimal() or not 0 < int(port) < 65536:
        raise BadRequestError(f"{field} {address[:64]!r} is not host:port", field)
