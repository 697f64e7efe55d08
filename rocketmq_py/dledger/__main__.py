"""``python -m rocketmq_py.dledger``: one DLedger member with a state machine that only counts, for tests.

    python -m rocketmq_py.dledger --group g --id n0 --peers "n0-127.0.0.1:40911;n1-127.0.0.1:40912" --store DIR

It prints one JSON line on stdout per event (``started``, ``role`` with the term, ``stopped``), logs to
stderr, and leaves on SIGTERM or SIGINT after flushing its files. A setting that cannot start it is one
line on stderr and exit status 1.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from typing import Sequence

from rocketmq_py.dledger.codes import Role
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.server import DLedgerServer
from rocketmq_py.errors import RocketMQError

_log = logging.getLogger("rocketmq_py.dledger")


def build_parser() -> argparse.ArgumentParser:
    defaults = DLedgerConfig()
    parser = argparse.ArgumentParser(prog="python -m rocketmq_py.dledger", description=__doc__.splitlines()[0])
    parser.add_argument("--group", required=True, help="the DLedger group (dLegerGroup)")
    parser.add_argument("--id", required=True, dest="self_id", help="this member's id (dLegerSelfId), e.g. n0")
    parser.add_argument("--peers", required=True, help="every member as n0-host:port;n1-host:port (dLegerPeers)")
    parser.add_argument("--store", required=True, help="the store base directory (dledger-<id>/ goes there)")
    parser.add_argument("--preferred-leader", default=None, help="preferredLeaderIds, e.g. n1 or n1;n2")
    parser.add_argument("--batch-push", action="store_true", help="isEnableBatchPush")
    parser.add_argument("--data-file-size", type=int, default=defaults.mapped_file_size_for_entry_data,
                        help="mappedFileSizeForEntryData (bytes)")
    parser.add_argument("--index-file-size", type=int, default=defaults.mapped_file_size_for_entry_index,
                        help="mappedFileSizeForEntryIndex (bytes, a multiple of 32)")
    parser.add_argument("--heartbeat-ms", type=int, default=defaults.heart_beat_time_interval_ms,
                        help="heartBeatTimeIntervalMs")
    parser.add_argument("--log-level", default="INFO")
    return parser


def _emit(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


async def _run(config: DLedgerConfig) -> None:
    server = DLedgerServer(config)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)

    def role_changed(term: int, role: Role) -> None:
        _emit("role", id=config.self_id, term=term, role=role.name)

    server.add_role_listener(role_changed)
    await server.start()
    applied = -1

    async def apply() -> None:
        nonlocal applied
        async for entry in server.committed_entries(max(server.ledger_begin_index, 0)):
            applied = entry.index

    applier = asyncio.ensure_future(apply())
    _emit("started", id=config.self_id, port=server.port, end=server.ledger_end_index,
          committed=server.committed_index, term=server.term)
    try:
        await stopping.wait()
    finally:
        applier.cancel()
        await server.shutdown()
        _emit("stopped", id=config.self_id, applied=applied, end=server.ledger_end_index,
              committed=server.committed_index)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-5s [%(name)s] %(message)s")
    config = DLedgerConfig(group=args.group, self_id=args.self_id, peers=args.peers, store_base_dir=args.store,
                           preferred_leader_ids=args.preferred_leader, enable_batch_push=args.batch_push,
                           mapped_file_size_for_entry_data=args.data_file_size,
                           mapped_file_size_for_entry_index=args.index_file_size,
                           heart_beat_time_interval_ms=args.heartbeat_ms)
    try:
        asyncio.run(_run(config))
    except (RocketMQError, OSError) as error:
        _log.error("DLedger member %s failed: %s", args.self_id, error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
