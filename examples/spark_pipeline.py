"""A Spark pipeline over RocketMQ: read a topic, count the messages per tag, write the counts to another topic.

    pip install -e '.[spark]'
    python examples/spark_pipeline.py --namesrv 127.0.0.1:9876 --source Orders --target OrderCounts
    python examples/spark_pipeline.py ... --stream --checkpoint /tmp/order-counts   # Structured Streaming
    spark-submit --master spark://host:7077 examples/spark_pipeline.py ...          # on a cluster

The batch mode reads the whole topic once; the streaming mode keeps its offsets in the checkpoint and
writes each micro-batch's counts (at most ``--max-per-trigger`` messages a batch) as they arrive;
``--available-now`` makes it stop once it has read what was there when it started.
"""
from __future__ import annotations

import argparse
import os
import sys


def session():
    from pyspark.sql import SparkSession

    from rocketmq_py.spark import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("rocketmq-pipeline").config("spark.log.level", "WARN")
    if os.environ.get("SPARK_MASTER"):  # else spark-submit's --master, or local[*] when run with python
        builder = builder.master(os.environ["SPARK_MASTER"])
    spark = builder.getOrCreate()
    register(spark)  # PySpark also finds the sources on its own when rocketmq-py is installed
    return spark


def counts_per_tag(messages):
    """One row per tag: the tag as the message key and tag, the count as the body."""
    from pyspark.sql import functions as F

    return (messages.groupBy(F.coalesce("tags", F.lit("(none)")).alias("tag")).count()
            .select(F.col("tag").alias("tags"), F.col("tag").alias("keys"),
                    F.to_json(F.struct("tag", "count")).alias("body")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--source", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--checkpoint", default="/tmp/rocketmq-spark-pipeline")
    parser.add_argument("--max-per-trigger", default="10000")
    parser.add_argument("--available-now", action="store_true",
                        help="with --stream: read what is there now, in micro-batches, then stop")
    args = parser.parse_args()
    spark = session()
    if not args.stream:
        messages = spark.read.format("rocketmq").option("nameServer", args.namesrv) \
            .option("topic", args.source).load()
        counts_per_tag(messages).write.format("rocketmq").option("nameServer", args.namesrv) \
            .option("topic", args.target).mode("append").save()
        spark.stop()
        return
    messages = spark.readStream.format("rocketmq").option("nameServer", args.namesrv) \
        .option("topic", args.source).option("startingOffsets", "earliest") \
        .option("maxOffsetsPerTrigger", args.max_per_trigger).load()
    writer = counts_per_tag(messages).writeStream.outputMode("complete").format("rocketmq") \
        .option("nameServer", args.namesrv).option("topic", args.target) \
        .option("checkpointLocation", args.checkpoint)
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
