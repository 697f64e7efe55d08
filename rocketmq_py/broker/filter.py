"""Which messages a pull returns (Java's broker/filter/ExpressionMessageFilter and ConsumerFilterManager).

A tag subscription is decided on the ConsumeQueue unit: the tags code (the
Java hash of the TAGS property) must be one of the subscription's codes,
unless it subscribes to ``*``. A SQL92 subscription passes every unit and is
decided on the record's properties. The compiled SQL92 selectors are cached
per expression.
"""
from __future__ import annotations

import logging
from functools import lru_cache

from rocketmq_py import codec
from rocketmq_py.broker.sql92 import Sql92Selector, compile_sql92
from rocketmq_py.common.filter import SUB_ALL, ExpressionType, SubscriptionData, build_subscription_data
from rocketmq_py.store import record_properties

_log = logging.getLogger(__name__)


@lru_cache(maxsize=1024)
def cached_selector(expression: str) -> Sql92Selector:
    return compile_sql92(expression)


def build_subscription(topic: str, sub_string: str | None, expression_type: str | None,
                       sub_version: int = 0) -> SubscriptionData:
    """A subscription from a PULL header (Java's FilterAPI.build); raises ValueError when it does not parse."""
    if ExpressionType.is_tag_type(expression_type):
        subscription = build_subscription_data(topic, sub_string)
    else:
        if expression_type != ExpressionType.SQL92:
            raise ValueError(f"unknown expression type {expression_type!r}")
        cached_selector(sub_string or "")
        subscription = SubscriptionData(topic, sub_string or "", expression_type=expression_type)
    if sub_version:
        subscription.sub_version = sub_version
    return subscription


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


class ExpressionMessageFilter:
    """The store's MessageFilter for one pull (and for the pull parked by long polling)."""

    __slots__ = ("subscription", "_codes", "_selector")

    def __init__(self, subscription: SubscriptionData | None) -> None:
        self.subscription = subscription
        self._codes: frozenset[int] | None = None
        self._selector: Sql92Selector | None = None
        if subscription is None or subscription.class_filter_mode:
            return
        if subscription.is_tag_type:
            if subscription.sub_string != SUB_ALL:
                self._codes = frozenset(subscription.code_set)
        else:
            self._selector = cached_selector(subscription.sub_string)

    @property
    def checks_tags(self) -> bool:
        return self._codes is not None

    @property
    def checks_records(self) -> bool:
        return self._selector is not None

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        codes = self._codes
        return codes is None or _java_int(tags_code) in codes

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        if self._selector is None:
            return True
        try:
            properties_text = record_properties(record)
        except Exception:
            _log.exception("cannot read the properties of a record for SQL92 filtering")
            return False
        return self.is_matched_by_properties(properties_text)

    def is_matched_by_properties(self, properties_text: str) -> bool:
        if self._selector is None:
            return True
        return self._selector.matches(codec.string_to_properties(properties_text))
