"""PySpark data sources for RocketMQ (install the ``spark`` extra: PySpark 4.x and pyarrow).

``rocketmq`` reads topics into DataFrames and writes DataFrames to topics, in batch and in
Structured Streaming; ``rocketmq.store`` reads a broker's CommitLog files. Register both with
``rocketmq_py.spark.register(spark)``; PySpark also finds them by itself through the
``pyspark_rocketmq`` and ``pyspark_rocketmq_store`` modules (its ``pyspark_*`` package scan).
pyspark is imported only when a source class is used, so ``import rocketmq_py`` never needs it.
"""
from __future__ import annotations

from typing import Any

__all__ = ["RocketMQDataSource", "RocketMQStoreDataSource", "register", "require_pyspark"]

INSTALL_HINT = "pip install 'rocketmq-py[spark]'"


def require_pyspark() -> None:
    """Raise ``ModuleNotFoundError`` with the install command when pyspark is missing."""
    try:
        import pyspark  # noqa: F401
    except ModuleNotFoundError as error:
        if error.name != "pyspark":
            raise
        raise ModuleNotFoundError(
            f"the rocketmq Spark data sources need PySpark, which is not installed: {INSTALL_HINT} "
            "(PySpark 4.x with pandas and pyarrow)", name="pyspark") from None


def register(spark: Any) -> None:
    """Register ``rocketmq`` and ``rocketmq.store`` with a SparkSession."""
    from rocketmq_py.spark.source import RocketMQDataSource
    from rocketmq_py.spark.store_source import RocketMQStoreDataSource

    spark.dataSource.register(RocketMQDataSource)
    spark.dataSource.register(RocketMQStoreDataSource)


def __getattr__(name: str) -> Any:
    if name == "RocketMQDataSource":
        from rocketmq_py.spark.source import RocketMQDataSource

        return RocketMQDataSource
    if name == "RocketMQStoreDataSource":
        from rocketmq_py.spark.store_source import RocketMQStoreDataSource

        return RocketMQStoreDataSource
    raise AttributeError(name)
