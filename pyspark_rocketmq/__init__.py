"""Found by PySpark's data source scan (modules named ``pyspark_*`` with a ``DefaultSource``): ``rocketmq``."""
from rocketmq_py.spark.source import RocketMQDataSource as DefaultSource

__all__ = ["DefaultSource"]
