"""Found by PySpark's data source scan (modules named ``pyspark_*`` with a ``DefaultSource``): ``rocketmq.store``."""
from rocketmq_py.spark.store_source import RocketMQStoreDataSource as DefaultSource

__all__ = ["DefaultSource"]
