"""rocketmq-py: Apache RocketMQ 4.x, wire- and store-compatible with the Java 4.9 release."""
from rocketmq_py.errors import RocketMQError

__version__ = "0.1.0.dev0"
__all__ = ["RocketMQError", "__version__"]
