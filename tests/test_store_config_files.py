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


def test_store_config_takes_the_keys_of_a_java_broker_conf(tmp_path):
    from rocketmq_py.common.config_file import apply_properties, parse_properties
    from rocketmq_py.store import MessageStoreConfig

    conf = parse_properties(
        "brokerClusterName=DefaultCluster\n"
        f"storePathRootDir={tmp_path}\n"
        "mappedFileSizeCommitLog=67108864\n"
        "mappedFileSizeConsumeQueue=600001\n"
        "flushDiskType=SYNC_FLUSH\n"
        "checkCRCOnRecover=false\n"
        "deleteWhen=04;16\n"
        "fileReservedTime=48\n"
        "diskMaxUsedSpaceRatio=99\n"
        "messageDelayLevel=1s 1m\n"
        "destroyMapedFileIntervalForcibly=5000\n"
    )
    config = MessageStoreConfig()
    unknown = apply_properties(config, conf)
    assert unknown == ["brokerClusterName"]
    assert (config.mapped_file_size_commit_log, config.flush_disk_type, config.check_crc_on_recover) == (
        67108864, "SYNC_FLUSH", False)
    assert config.consume_queue_file_size == 600020, "rounded up to whole units, as Java's getter"
    assert config.effective_disk_max_used_space_ratio == 95
    assert (config.delete_when, config.file_reserved_time, config.destroy_maped_file_interval_forcibly) == (
        "04;16", 48, 5000)
    assert config.commit_log_dir == tmp_path / "commitlog"
