"""Subscriptions and message selectors (Java's common/filter/FilterAPI, ExpressionType, heartbeat/SubscriptionData
and client/consumer/MessageSelector).

A tag expression (``"*"``, ``"TagA || TagB"``) becomes the set of tags and
their Java ``String.hashCode()`` codes, which the broker matches against the
tags code of each consume-queue entry and the client matches again by tag
string. A SQL92 expression is sent as is (expressionType ``SQL92``) and
evaluated by the broker; it is parsed here first, with the grammar of Java's
filter/parser/SelectorParser.jj, so that a typo fails at ``subscribe`` with a
message rather than as a silent lack of messages.
"""
from __future__ import annotations

from typing import Any

import re
from dataclasses import dataclass, field

from rocketmq_py import codec
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.json_shape import INT, LONG
from rocketmq_py.errors import InvalidSelectorError

SUB_ALL = "*"


class ExpressionType:
    """The kinds of subscription expression: TAG or SQL92."""

    TAG = "TAG"
    SQL92 = "SQL92"

    @staticmethod
    def is_tag_type(kind: str | None) -> bool:
        """Whether ``kind`` is a tag expression (None and empty count as one)."""
        return kind is None or kind == "" or kind == ExpressionType.TAG


#: The types of Java's SubscriptionData, for :mod:`rocketmq_py.common.json_shape`.
SUBSCRIPTION_DATA_SHAPE = {
    "topic": str, "subString": str, "tagsSet": [str], "codeSet": [INT], "subVersion": LONG,
    "expressionType": str, "classFilterMode": bool,
}

@dataclass(frozen=True)
class MessageSelector:
    """What a consumer subscribes to: ``MessageSelector.by_tag("A || B")`` or ``MessageSelector.by_sql("a > 5")``."""

    expression_type: str
    expression: str

    @classmethod
    def by_tag(cls, expression: str | None = None) -> "MessageSelector":
        """Select by tag expression (``"*"``, ``"TagA || TagB"``); None means every tag."""
        return cls(ExpressionType.TAG, expression or SUB_ALL)

    @classmethod
    def by_sql(cls, expression: str) -> "MessageSelector":
        """Select by SQL92 expression over message properties (the broker needs enablePropertyFilter)."""
        return cls(ExpressionType.SQL92, expression)


@dataclass
class SubscriptionData:
    topic: str
    sub_string: str = SUB_ALL
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = field(default_factory=now_ms)
    expression_type: str = ExpressionType.TAG
    class_filter_mode: bool = False

    @property
    def is_tag_type(self) -> bool:
        return ExpressionType.is_tag_type(self.expression_type)

    def matches_tag(self, tags: str | None) -> bool:
        """The client-side tag check: everything for ``*``, else an exact tag string of the set."""
        if not self.tags_set:
            return True
        return tags is not None and tags in self.tags_set

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": list(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": list(self.tags_set),
            "topic": self.topic,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "SubscriptionData":
        return cls(
            topic=data.get("topic", ""),
            sub_string=data.get("subString") or SUB_ALL,
            tags_set=list(data.get("tagsSet") or []),
            code_set=[int(code) for code in data.get("codeSet") or []],
            sub_version=int(data.get("subVersion", 0)),
            expression_type=data.get("expressionType") or ExpressionType.TAG,
            class_filter_mode=bool(data.get("classFilterMode", False)),
        )


def build_subscription_data(topic: str, sub_string: str | None) -> SubscriptionData:
    """A tag subscription (Java's FilterAPI.buildSubscriptionData): tags split on ``||`` and trimmed."""
    if sub_string is None or sub_string == "" or sub_string.strip() == SUB_ALL:
        return SubscriptionData(topic, SUB_ALL)
    if not isinstance(sub_string, str):
        raise InvalidSelectorError(f"a tag expression must be a string, not {type(sub_string).__name__}")
    tags: list[str] = []
    for part in sub_string.split("||"):
        tag = part.strip()
        if tag and tag not in tags:
            tags.append(tag)
    if not tags:
        raise InvalidSelectorError(
            f"the tag expression {sub_string!r} names no tag: use '*' for all, or tags joined by '||' ('TagA || TagB')"
        )
    return SubscriptionData(topic, sub_string, tags, [codec.java_string_hash(tag) for tag in tags])


def build_subscription(topic: str, selector: "MessageSelector | str | None") -> SubscriptionData:
    """A subscription from a tag expression string or a :class:`MessageSelector` (Java's FilterAPI.build)."""
    if selector is None or isinstance(selector, str):
        return build_subscription_data(topic, selector)
    if not isinstance(selector, MessageSelector):
        raise InvalidSelectorError(
            f"a subscription takes a tag expression or a MessageSelector, not {type(selector).__name__}"
        )
    if ExpressionType.is_tag_type(selector.expression_type):
        return build_subscription_data(topic, selector.expression)
    if selector.expression_type != ExpressionType.SQL92:
        raise InvalidSelectorError(
            f"unknown expression type {selector.expression_type!r}: use MessageSelector.by_tag or by_sql"
        )
    if not selector.expression or not selector.expression.strip():
        raise InvalidSelectorError("the SQL92 expression is empty: give a condition such as \"a > 5\"")
    check_sql92(selector.expression)
    return SubscriptionData(topic, selector.expression, expression_type=ExpressionType.SQL92)


# --- SQL92 syntax (filter/parser/SelectorParser.jj) ---------------------------------------------

_TOKEN = re.compile(
    r"""\s+|--[^\n\r]*(?:\r\n|\n|\r)|/\*.*?\*/
    |(?P<float>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
    |(?P<decimal>0|[1-9]\d*[lL]?)
    |(?P<string>'(?:''|[^'])*')
    |(?P<word>[A-Za-z_$][A-Za-z0-9_$]*)
    |(?P<op><>|>=|<=|[=<>(),+-])""",
    re.VERBOSE | re.DOTALL,
)
_KEYWORDS = {"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"}


def _tokens(expression: str) -> list[tuple[str, str]]:
    tokens = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None:
            raise InvalidSelectorError(
                f"the SQL92 expression {expression!r} has an unexpected character {expression[position]!r} "
                f"at position {position}"
            )
        position = match.end()
        kind = match.lastgroup
        if kind is None:
            continue
        text = match.group(kind)
        if kind == "word" and text.upper() in _KEYWORDS:
            tokens.append(("kw", text.upper()))
        else:
            tokens.append((kind, text))
    return tokens


class _SqlSyntax:
    """A recursive descent check of the JMS-like selector grammar RocketMQ's broker accepts."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tokens = _tokens(expression)
        self.index = 0

    def fail(self, expected: str) -> InvalidSelectorError:
        found = repr(self.tokens[self.index][1]) if self.index < len(self.tokens) else "the end"
        return InvalidSelectorError(f"the SQL92 expression {self.expression!r} is not valid: expected {expected}, "
                                    f"found {found}")

    def peek(self, offset: int = 0) -> tuple[str, str] | None:
        position = self.index + offset
        return self.tokens[position] if position < len(self.tokens) else None

    def accept(self, kind: str, text: str | None = None) -> bool:
        token = self.peek()
        if token is not None and token[0] == kind and (text is None or token[1] == text):
            self.index += 1
            return True
        return False

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> None:
        if not self.accept(kind, text):
            raise self.fail(what or text or kind)

    def check(self) -> None:
        if not self.tokens:
            raise InvalidSelectorError("the SQL92 expression is empty")
        self.or_expression()
        if self.index != len(self.tokens):
            raise self.fail("AND, OR or the end")

    def or_expression(self) -> None:
        self.and_expression()
        while self.accept("kw", "OR"):
            self.and_expression()

    def and_expression(self) -> None:
        self.equality()
        while self.accept("kw", "AND"):
            self.equality()

    def equality(self) -> None:
        self.comparison()
        while True:
            if self.accept("op", "=") or self.accept("op", "<>"):
                self.comparison()
            elif self.accept("kw", "IS"):
                self.accept("kw", "NOT")
                self.expect("kw", "NULL")
            else:
                return

    def comparison(self) -> None:
        self.unary()
        while True:
            token = self.peek()
            if token in (("op", ">"), ("op", ">="), ("op", "<"), ("op", "<=")):
                self.index += 1
                self.unary()
            elif token == ("kw", "BETWEEN") or (token == ("kw", "NOT") and self.peek(1) == ("kw", "BETWEEN")):
                self.index += 1 if token[1] == "BETWEEN" else 2
                self.unary()
                self.expect("kw", "AND")
                self.unary()
            elif token == ("kw", "IN") or (token == ("kw", "NOT") and self.peek(1) == ("kw", "IN")):
                self.index += 1 if token[1] == "IN" else 2
                self.expect("op", "(")
                self.expect("string", what="a string literal")
                while self.accept("op", ","):
                    self.expect("string", what="a string literal")
                self.expect("op", ")")
            else:
                return

    def unary(self) -> None:
        if self.accept("op", "+") or self.accept("op", "-") or self.accept("kw", "NOT"):
            self.unary()
            return
        if self.accept("op", "("):
            self.or_expression()
            self.expect("op", ")")
            return
        token = self.peek()
        if token is not None and (token[0] in ("string", "decimal", "float", "word")
                                  or token in (("kw", "TRUE"), ("kw", "FALSE"), ("kw", "NULL"))):
            self.index += 1
            return
        raise self.fail("a property, a literal or '('")


def check_sql92(expression: str) -> None:
    """Raise :class:`InvalidSelectorError` unless ``expression`` follows the broker's SQL92 grammar."""
    _SqlSyntax(expression).check()
