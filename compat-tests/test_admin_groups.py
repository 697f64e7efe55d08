"""Issue 32, subscription groups: a group made or changed by mqadmin is what our Admin reads, one made by our
Admin is what mqadmin's getConsumerConfig prints (and ours prints the same), and deletion by either tool is
seen by the other, on the Java servers and on ours."""
from __future__ import annotations

from harness import mqadmin, unique_name
from harness.admin_text import assignments, rocketmq_py

from rocketmq_py import Admin
from rocketmq_py.common.subscription_group import SubscriptionGroupConfig


def test_groups_made_listed_and_deleted_by_either_tool(servers):
    namesrv, broker = servers
    by_mqadmin, by_admin = unique_name("mqadmin_group"), unique_name("admin_group")
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        out = mqadmin("updateSubGroup", "-b", broker.addr, "-g", by_mqadmin, "-r", "5", "-q", "2", "-a", "false",
                      namesrv=namesrv.addr)
        assert out.startswith(f"create subscription group to {broker.addr} success.")
        # mqadmin's defaults: no broadcast, not from the min offset.
        assert admin.examine_subscription_group_config(broker.addr, by_mqadmin) == SubscriptionGroupConfig(
            by_mqadmin, consume_from_min_enable=False, consume_broadcast_enable=False, retry_queue_nums=2,
            retry_max_times=5, notify_consumer_ids_changed_enable=False)

        made = SubscriptionGroupConfig(by_admin, consume_enable=False, retry_max_times=3, broker_id=0,
                                       which_broker_when_consume_slowly=1)
        admin.create_and_update_subscription_group_config(broker.addr, made)
        printed = mqadmin("getConsumerConfig", "-g", by_admin, namesrv=namesrv.addr)
        assert assignments(printed) == {
            "groupName": by_admin, "consumeEnable": "false", "consumeFromMinEnable": "true",
            "consumeBroadcastEnable": "true", "retryQueueNums": "1", "retryMaxTimes": "3", "brokerId": "0",
            "whichBrokerWhenConsumeSlowly": "1", "notifyConsumerIdsChangedEnable": "true"}
        assert rocketmq_py("admin", "getConsumerConfig", "-g", by_admin, namesrv=namesrv.addr) == printed
        assert {by_admin, by_mqadmin} <= set(admin.get_all_subscription_group(broker.addr))

        admin.delete_subscription_group(broker.addr, by_mqadmin)
        assert mqadmin("getConsumerConfig", "-g", by_mqadmin, namesrv=namesrv.addr) == ""
        out = mqadmin("deleteSubGroup", "-b", broker.addr, "-g", by_admin, namesrv=namesrv.addr)
        assert out == f"delete subscription group [{by_admin}] from broker [{broker.addr}] success.\n"
        assert admin.examine_subscription_group_config(broker.addr, by_admin) is None
