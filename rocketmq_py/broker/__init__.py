"""The broker: configuration, controller, processors, long polling, and the topic, group and offset managers."""
from rocketmq_py.broker.config import BrokerConfig, load_broker_config
from rocketmq_py.broker.controller import BrokerController

__all__ = ["BrokerConfig", "BrokerController", "load_broker_config"]
