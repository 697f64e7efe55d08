"""Send N messages to a topic and print a one-line summary (per broker).

    python examples/produce.py --namesrv 127.0.0.1:9876 --topic DemoTopic --count 100

The name server address may also come from NAMESRV_ADDR. Exit status 0 when every send was SEND_OK.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys

from rocketmq_py.client.producer import Producer, SendStatus
from rocketmq_py.common.message import Message


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    parser.add_argument("--topic", default="DemoTopic")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--group", default="demo_producer_group")
    args = parser.parse_args()
    per_broker: collections.Counter[str] = collections.Counter()
    with Producer(args.group, namesrv_addr=args.namesrv) as producer:
        for i in range(args.count):
            result = producer.send(Message(args.topic, f"message {i}".encode(), keys=f"key-{i}"))
            if result.send_status is SendStatus.SEND_OK:
                per_broker[result.message_queue.broker_name] += 1
    sent = sum(per_broker.values())
    print(f"sent {sent}/{args.count} SEND_OK to {args.topic}: "
          + ", ".join(f"{broker}={count}" for broker, count in sorted(per_broker.items())))
    return 0 if sent == args.count else 1


if __name__ == "__main__":
    sys.exit(main())
