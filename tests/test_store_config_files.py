"""The broker's JSON config files: Java's formats (fastjson pretty form, unquoted integer keys),
the tmp/bak write method and the fallback to the backup on load."""
from __future__ import annotations

import pytest

from rocketmq_py import codec
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.subscription_group import SubscriptionGroupConfig
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.store import StoreError
from rocketmq_py.store.config_files import (
    ConsumerOffsetTable,
    DelayOffsetTable,
    SubscriptionGroupTable,
    TopicConfigTable,
)

JAVA_TOPICS = """{
\t"dataVersion":{
\t\t"counter":3,
\t\t"timestamp":1700000000000
\t},
\t"topicConfigTable":{
\t\t"TBW102":{
\t\t\t"order":false,
\t\t\t"perm":7,
\t\t\t"readQueueNums":8,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"TBW102",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":8
\t\t}
\t}
}"""


def test_topics_json_reads_java_and_writes_the_same_text(tmp_path):
    (tmp_path / "topics.json").write_text(JAVA_TOPICS)
    topics = TopicConfigTable(tmp_path)
    assert topics.load()
    assert topics.table == {"TBW102": TopicConfig("TBW102", 8, 8, 7)}
    assert topics.data_version == DataVersion(1700000000000, 3)
    assert topics.encode(pretty=True) == JAVA_TOPICS


def test_consumer_offsets_use_unquoted_queue_ids(tmp_path):
    offsets = ConsumerOffsetTable(tmp_path)
    offsets.commit_offset("group", "T", 1, 10)
    offsets.commit_offset("group", "T", 0, 12)
    assert offsets.encode() == '{"offsetTable":{"T@group":{0:12,1:10}}}'
    offsets.persist()
    again = ConsumerOffsetTable(tmp_path)
    assert again.load()
    assert again.query_offset("group", "T", 0) == 12 and again.query_offset("group", "T", 5) == -1


def test_subscription_groups_round_trip(tmp_path):
    groups = SubscriptionGroupTable(tmp_path)
    groups.table["g"] = SubscriptionGroupConfig("g", retry_max_times=3)
    groups.persist()
    data = codec.json_loads((tmp_path / "subscriptionGroup.json").read_text())
    assert data["subscriptionGroupTable"]["g"] == {
        "brokerId": 0, "consumeBroadcastEnable": True, "consumeEnable": True, "consumeFromMinEnable": True,
        "groupName": "g", "notifyConsumerIdsChangedEnable": True, "retryMaxTimes": 3, "retryQueueNums": 1,
        "whichBrokerWhenConsumeSlowly": 1}
    again = SubscriptionGroupTable(tmp_path)
    assert again.load() and again.table == groups.table


def test_delay_offsets(tmp_path):
    delays = DelayOffsetTable(tmp_path)
    delays.offset_table = {2: 17, 1: 0}
    assert delays.encode() == '{"offsetTable":{1:0,2:17}}'


def test_load_falls_back_to_the_backup(tmp_path):
    offsets = ConsumerOffsetTable(tmp_path)
    offsets.commit_offset("g", "T", 0, 1)
    offsets.persist()
    offsets.commit_offset("g", "T", 0, 2)
    offsets.persist()
    (tmp_path / "consumerOffset.json").write_text("{broken")
    again = ConsumerOffsetTable(tmp_path)
    assert again.load() and again.query_offset("g", "T", 0) == 1
    (tmp_path / "consumerOffset.json.bak").write_text("")
    with pytest.raises(StoreError):
        ConsumerOffsetTable(tmp_path).load()
    assert not TopicConfigTable(tmp_path / "none").load()
