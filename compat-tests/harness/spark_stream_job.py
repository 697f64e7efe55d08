"""A streaming job for ``spark-submit`` in the standalone-cluster tests: a rocketmq topic into parquet files.

    spark-submit --master spark://... spark_stream_job.py NAMESRV TOPIC OUT CHECKPOINT [--available-now]

Without ``--available-now`` it runs until it is killed (the test kills its driver with SIGKILL);
with it, it reads what is there from its checkpoint on and stops.
"""
from __future__ import annotations

import argparse

from pyspark.sql import SparkSession


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("namesrv", "topic", "out", "checkpoint"):
        parser.add_argument(name)
    parser.add_argument("--available-now", action="store_true")
    parser.add_argument("--max-per-trigger", default="500")
    args = parser.parse_args()
    spark = SparkSession.builder.appName("rocketmq-stream-job").getOrCreate()
    stream = spark.readStream.format("rocketmq").option("nameServer", args.namesrv).option("topic", args.topic) \
        .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", args.max_per_trigger).load() \
        .selectExpr("cast(body as string) as body", "queueId", "queueOffset")
    writer = stream.writeStream.format("parquet").option("path", args.out) \
        .option("checkpointLocation", args.checkpoint)
    writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(processingTime="1 second")
    writer.start().awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
