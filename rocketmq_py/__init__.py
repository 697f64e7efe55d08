"""rocketmq-py: Apache RocketMQ 4.x, wire- and store-compatible with the Java 4.9 release."""
from rocketmq_py._version import __version__
from rocketmq_py.errors import RocketMQError

__all__ = ["RocketMQError", "__version__"]
