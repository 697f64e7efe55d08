"""Options of the ``rocketmq`` data source, checked on the driver before any job runs.

Spark hands options over as a case-insensitive dict of strings; :func:`parse_options`
turns them into one :class:`SourceOptions` (a plain dataclass, so it pickles to the
executors) or raises :class:`InvalidOptionError` naming the option and what to do.
No pyspark import here, so the checks are testable without a JVM.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

EARLIEST = -2
LATEST = -1

#: The options this source knows (lower case); any other is an error rather than silently ignored.
KNOWN_OPTIONS = frozenset({
    "nameserver", "rocketmq.namesrvaddr", "topic", "topicpattern", "startingoffsets", "endingoffsets",
    "startingtimestamp", "endingtimestamp", "maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay",
    "minpartitions", "failondataloss", "group", "accesskey", "secretkey",
    "securitytoken", "pullbatchsize", "pulltimeoutms", "pipelinedepth", "subexpression", "usetls",
    # writer
    "shardingkey", "sendtimeoutms", "producergroup", "maxinflight",
})

#: Options that belong to Spark, not to this source: they reach the source's option map (for example
#: ``writeStream.option("checkpointLocation", ...)``) and are let through untouched, never refused.
SPARK_OPTIONS = frozenset({"path", "paths", "checkpointlocation", "queryname"})

#: Kafka's default maxTriggerDelay.
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000


class InvalidOptionError(ValueError):
    """A ``rocketmq`` source or sink option is missing, malformed or unknown."""


@dataclass(frozen=True)
class ClientSettings:
    """What an executor needs to open its own connections (picklable)."""

    namesrv_addr: str
    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    use_tls: bool = False
    pull_batch_size: int = 32
    pull_timeout_ms: int = 10_000
    pipeline_depth: int = 16


@dataclass(frozen=True)
class SourceOptions:
    client: ClientSettings
    #: The topics named by option ``topic``; empty when ``topic_pattern`` picks them.
    topics: tuple[str, ...]
    #: "earliest", "latest", or {topic: {broker: {queueId: offset}}} with -2/-1 for earliest/latest.
    starting: str | dict[str, Any] = "earliest"
    ending: str | dict[str, Any] = "latest"
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    #: A regex matched in full against the name server's topic list, re-read at every trigger.
    topic_pattern: str | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    group: str = "SPARK_READER"
    sub_expression: str = "*"
    extra: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True)
class SinkOptions:
    client: ClientSettings
    topic: str | None = None
    sharding_key: str | None = None
    send_timeout_ms: int = 3000
    producer_group: str = "SPARK_WRITER"
    max_in_flight: int = 1024


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): v for k, v in options.items() if v is not None}


def _check_known(opts: dict[str, str]) -> None:
    unknown = sorted(k for k in opts if k not in KNOWN_OPTIONS and k not in SPARK_OPTIONS
                     and not k.startswith("rocketmq.") and not k.startswith("spark."))
    if unknown:
        raise InvalidOptionError(
            f"unknown rocketmq option(s) {unknown}: see docs/spark.md for the options table"
        )


def _int(opts: dict[str, str], name: str, default: int | None, minimum: int = 0) -> int | None:
    raw = opts.get(name.lower())
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidOptionError(f"option {name}={raw!r} must be an integer") from None
    if value < minimum:
        raise InvalidOptionError(f"option {name}={value} must be at least {minimum}")
    return value


def _bool(opts: dict[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None or raw == "":
        return default
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InvalidOptionError(f"option {name}={raw!r} must be true or false")


_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
                      "d": 86_400_000}


def _duration_ms(opts: dict[str, str], name: str, default: int) -> int:
    """A duration as Spark writes them (``15m``, ``30s``, ``500ms``, ``1h``; a bare number is milliseconds)."""
    raw = opts.get(name.lower())
    if raw is None or str(raw).strip() == "":
        return default
    text = str(raw).strip().lower()
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = text[len(number):].strip() or "ms"
    if not number.isdigit() or unit not in _DURATION_UNITS_MS:
        raise InvalidOptionError(f"option {name}={raw!r} must be a duration such as 500ms, 30s, 15m or 1h")
    return int(number) * _DURATION_UNITS_MS[unit]


def parse_client(opts: dict[str, str]) -> ClientSettings:
    namesrv = opts.get("nameserver") or opts.get("rocketmq.namesrvaddr")
    if not namesrv:
        raise InvalidOptionError("option nameServer is required: the name server address, e.g. 127.0.0.1:9876")
    access_key, secret_key = opts.get("accesskey"), opts.get("secretkey")
    if bool(access_key) != bool(secret_key):
        raise InvalidOptionError("options accessKey and secretKey go together: give both or neither")
    return ClientSettings(
        namesrv_addr=namesrv.strip(),
        access_key=access_key or None,
        secret_key=secret_key or None,
        security_token=opts.get("securitytoken") or None,
        use_tls=_bool(opts, "useTLS", False),
        pull_batch_size=_int(opts, "pullBatchSize", 32, 1),  # type: ignore[arg-type]
        pull_timeout_ms=_int(opts, "pullTimeoutMs", 10_000, 1),  # type: ignore[arg-type]
        pipeline_depth=_int(opts, "pipelineDepth", 16, 1),  # type: ignore[arg-type]
    )


def parse_offsets_option(name: str, raw: str | None, default: str, allow_earliest: bool = True) -> str | dict[str, Any]:
    """``earliest`` / ``latest`` or the JSON ``{"topic": {"broker": {"queueId": offset}}}``."""
    if raw is None or str(raw).strip() == "":
        return default
    text = str(raw).strip()
    if text.lower() in ("earliest", "latest"):
        if text.lower() == "earliest" and not allow_earliest:
            raise InvalidOptionError(f"option {name}=earliest makes no sense: use latest or JSON offsets")
        return text.lower()
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidOptionError(
            f"option {name} is neither earliest, latest nor valid JSON ({error.msg} at character {error.pos}): "
            'expected {"topic": {"brokerName": {"queueId": offset}}}'
        ) from None
    return validate_offsets(name, parsed, allow_earliest)


def validate_offsets(name: str, parsed: object, allow_earliest: bool = True) -> dict[str, Any]:
    """Check the nesting and the values; return the dict with string keys and int offsets."""
    shape = 'expected {"topic": {"brokerName": {"queueId": offset}}} with offset >= 0, -2 (earliest) or -1 (latest)'
    if not isinstance(parsed, dict):
        raise InvalidOptionError(f"option {name} must be a JSON object: {shape}")
    result: dict[str, Any] = {}
    for topic, brokers in parsed.items():
        if not isinstance(brokers, dict):
            raise InvalidOptionError(f"option {name}: the value of topic {topic!r} must be an object; {shape}")
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise InvalidOptionError(f"option {name}: the value of {topic}/{broker} must be an object; {shape}")
            for queue_id, offset in queues.items():
                if not str(queue_id).isdigit():
                    raise InvalidOptionError(f"option {name}: queue id {queue_id!r} of {topic}/{broker} "
                                             f"is not a number; {shape}")
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                    raise InvalidOptionError(f"option {name}: offset {offset!r} of {topic}/{broker}/{queue_id} "
                                             f"is not valid; {shape}")
                if offset == EARLIEST and not allow_earliest:
                    raise InvalidOptionError(f"option {name}: -2 (earliest) is not allowed as an end offset")
                result.setdefault(str(topic), {}).setdefault(str(broker), {})[str(int(queue_id))] = offset
    return result


def parse_source_options(options: Mapping[str, str], streaming: bool = False) -> SourceOptions:
    opts = _lower(options)
    _check_known(opts)
    client = parse_client(opts)
    topics = tuple(t.strip() for t in (opts.get("topic") or "").split(",") if t.strip())
    pattern = (opts.get("topicpattern") or "").strip() or None
    if topics and pattern:
        raise InvalidOptionError("options topic and topicPattern exclude each other: give one of them")
    if not topics and not pattern:
        raise InvalidOptionError("option topic is required: one topic or several separated by commas "
                                 "(or topicPattern, a regular expression over the name server's topics)")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as error:
            raise InvalidOptionError(f"option topicPattern={pattern!r} is not a valid regular expression: "
                                     f"{error}") from None
    starting = parse_offsets_option("startingOffsets", opts.get("startingoffsets"),
                                    "latest" if streaming else "earliest")
    for batch_only in ("endingOffsets", "endingTimestamp"):
        if streaming and batch_only.lower() in opts:
            raise InvalidOptionError(f"option {batch_only} is for batch reads only; a stream has no end")
    ending = parse_offsets_option("endingOffsets", opts.get("endingoffsets"), "latest", allow_earliest=False)
    if not streaming and starting == "latest":
        raise InvalidOptionError("option startingOffsets=latest is for streams; a batch read would be empty")
    for name, value in (("startingOffsets", starting), ("endingOffsets", ending)):
        if isinstance(value, dict) and pattern is None:
            strange = sorted(set(value) - set(topics))
            if strange:
                raise InvalidOptionError(f"option {name} names topic(s) {strange} that option topic does not")
    for stream_only in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
        if not streaming and stream_only.lower() in opts:
            raise InvalidOptionError(f"option {stream_only} is for streaming reads only")
    max_per_trigger = _int(opts, "maxOffsetsPerTrigger", None, 1)
    min_per_trigger = _int(opts, "minOffsetsPerTrigger", None, 1)
    if max_per_trigger is not None and min_per_trigger is not None and min_per_trigger > max_per_trigger:
        raise InvalidOptionError(f"option minOffsetsPerTrigger={min_per_trigger} is more than "
                                 f"maxOffsetsPerTrigger={max_per_trigger}")
    starting_timestamp = _int(opts, "startingTimestamp", None, 0)
    ending_timestamp = _int(opts, "endingTimestamp", None, 0)
    if starting_timestamp is not None and ending_timestamp is not None and ending_timestamp < starting_timestamp:
        raise InvalidOptionError(f"option endingTimestamp={ending_timestamp} is before "
                                 f"startingTimestamp={starting_timestamp}")
    sub_expression = (opts.get("subexpression") or "*").strip() or "*"
    return SourceOptions(
        client=client,
        topics=topics,
        starting=starting,
        ending=ending,
        starting_timestamp=starting_timestamp,
        ending_timestamp=ending_timestamp,
        topic_pattern=pattern,
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=_duration_ms(opts, "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY_MS),
        min_partitions=_int(opts, "minPartitions", None, 1),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        group=(opts.get("group") or "SPARK_READER").strip(),
        sub_expression=sub_expression,
        extra={k: v for k, v in opts.items() if k.startswith("rocketmq.") and k != "rocketmq.namesrvaddr"},
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    _check_known(opts)
    for reader_only in ("startingoffsets", "endingoffsets", "startingtimestamp", "endingtimestamp",
                        "maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay", "minpartitions",
                        "topicpattern"):
        if reader_only in opts:
            raise InvalidOptionError(f"option {reader_only} is for reading; a rocketmq sink does not take it")
    return SinkOptions(
        client=parse_client(opts),
        topic=(opts.get("topic") or "").strip() or None,
        sharding_key=(opts.get("shardingkey") or "").strip() or None,
        send_timeout_ms=_int(opts, "sendTimeoutMs", 3000, 1),  # type: ignore[arg-type]
        producer_group=(opts.get("producergroup") or "SPARK_WRITER").strip(),
        max_in_flight=_int(opts, "maxInFlight", 1024, 1),  # type: ignore[arg-type]
    )
