"""Read N messages of a topic from the beginning with a lite pull consumer, and print a one-line summary.

    python examples/consume.py --namesrv 127.0.0.1:9876 --topic DemoTopic --count 100

The name server address may also come from NAMESRV_ADDR. Exit status 0 when N messages arrived
within --timeout seconds.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

from rocketmq_py.client.consumer import LitePullConsumer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    parser.add_argument("--topic", default="DemoTopic")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--group", default="demo_consumer_group")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    per_broker: collections.Counter[str] = collections.Counter()
    with LitePullConsumer(args.group, namesrv_addr=args.namesrv,
                          consume_from_where="CONSUME_FROM_FIRST_OFFSET") as consumer:
        consumer.subscribe(args.topic, "*")
        deadline = time.monotonic() + args.timeout
        while sum(per_broker.values()) < args.count and time.monotonic() < deadline:
            for message in consumer.poll(1000):
                per_broker[message.broker_name] += 1
    received = sum(per_broker.values())
    print(f"received {received}/{args.count} from {args.topic}: "
          + ", ".join(f"{broker}={count}" for broker, count in sorted(per_broker.items())))
    return 0 if received >= args.count else 1


if __name__ == "__main__":
    sys.exit(main())
