"""Issue 32, clusters and brokers: our Admin and Java's mqadmin (4.9.8 tools) read the same cluster, runtime
statistics and configuration from the Java servers and from ours, and a configuration change made by one is
what the other reads."""
from __future__ import annotations

from harness import mqadmin, unique_name
from harness.admin_text import assignments, table

from rocketmq_py import Admin


def test_cluster_list_and_broker_runtime_stats(servers):
    namesrv, broker = servers
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        info = admin.examine_broker_cluster_info()
        stats = admin.fetch_broker_runtime_stats(broker.addr).table
    printed = table(mqadmin("clusterList", namesrv=namesrv.addr))
    assert [row[:4] for row in printed] == [
        [cluster, name, str(broker_id), addr]
        for cluster, names in sorted(info.cluster_addr_table.items()) for name in sorted(names)
        for broker_id, addr in sorted(info.broker_addr_table[name].broker_addrs.items())]
    assert [broker.cluster, broker.broker_name, "0", broker.addr, stats["brokerVersionDesc"]] in [r[:5] for r in printed]

    status = {key: value for key, _, value in (line.partition(":") for line in
              mqadmin("brokerStatus", "-b", broker.addr, namesrv=namesrv.addr).splitlines()) if key}
    status = {key.strip(): value.strip() for key, value in status.items()}
    assert set(status) == set(stats), "the same keys, from the same broker answer"
    for key in ("brokerVersionDesc", "brokerVersion", "bootTimestamp", "commitLogMinOffset"):
        assert status[key] == stats[key].strip(), key


def test_broker_config_read_and_changed_by_either_tool(servers):
    namesrv, broker = servers
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        ours = admin.get_broker_config(broker.addr)
        theirs = assignments(mqadmin("getBrokerConfig", "-b", broker.addr, namesrv=namesrv.addr))
        assert theirs == ours and ours["brokerName"] == broker.broker_name

        admin.update_broker_config(broker.addr, {"maxMessageSize": "3145728"})
        assert assignments(mqadmin("getBrokerConfig", "-b", broker.addr, namesrv=namesrv.addr))[
            "maxMessageSize"] == "3145728"
        out = mqadmin("updateBrokerConfig", "-b", broker.addr, "-k", "maxMessageSize", "-v", "4194304",
                      namesrv=namesrv.addr)
        assert out == f"update broker config success, {broker.addr}\n"
        assert admin.get_broker_config(broker.addr)["maxMessageSize"] == "4194304"
