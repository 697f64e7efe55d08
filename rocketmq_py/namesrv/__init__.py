"""The name server: route info, KV config, request processor and the controller that runs them."""
from rocketmq_py.namesrv.config import NamesrvConfig, load_namesrv_config
from rocketmq_py.namesrv.controller import NamesrvController
from rocketmq_py.namesrv.kv_config import KVConfigManager
from rocketmq_py.namesrv.processor import NamesrvProcessor
from rocketmq_py.namesrv.register_body import RegisterBrokerBody
from rocketmq_py.namesrv.route_info import RouteInfoManager

__all__ = [
    "KVConfigManager",
    "NamesrvConfig",
    "NamesrvController",
    "NamesrvProcessor",
    "RegisterBrokerBody",
    "RouteInfoManager",
    "load_namesrv_config",
]
