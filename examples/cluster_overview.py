"""Print what a RocketMQ name server knows: clusters, brokers, topics and one topic's route.

    python examples/cluster_overview.py --namesrv 127.0.0.1:9876 [--topic TBW102]

Works against the Java name server and against ours (the name server address may also come from
NAMESRV_ADDR).
"""
from __future__ import annotations

import argparse
import asyncio
import os

from rocketmq_py.client.api import MQClientAPI
from rocketmq_py.common.route import PermName
from rocketmq_py.remoting import RemotingClient


async def overview(namesrv: str, topic: str) -> None:
    async with RemotingClient() as remoting:
        api = MQClientAPI(remoting)
        cluster = await api.get_cluster_info(namesrv)
        for cluster_name, broker_names in sorted(cluster.cluster_addr_table.items()):
            print(f"cluster {cluster_name}")
            for name in sorted(broker_names):
                for broker_id, addr in sorted(cluster.broker_addr_table[name].broker_addrs.items()):
                    print(f"  broker {name} id={broker_id} {addr}")
        topics = await api.get_all_topics(namesrv)
        print(f"{len(topics.topics)} topics: {', '.join(sorted(topics.topics))}")
        route = await api.get_topic_route(namesrv, topic)
        print(f"route of {topic}:")
        for queue in route.queue_datas:
            print(f"  {queue.broker_name}: read={queue.read_queue_nums} write={queue.write_queue_nums} "
                  f"perm={PermName.to_string(queue.perm)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    parser.add_argument("--topic", default="TBW102")
    args = parser.parse_args()
    asyncio.run(overview(args.namesrv, args.topic))


if __name__ == "__main__":
    main()
