"""SQL92 message selectors as the broker evaluates them (Java's filter module: SelectorParser.jj and the
expression classes ComparisonExpression, LogicExpression, UnaryExpression).

``compile_sql92(text)`` parses a selector once; the result's ``matches(properties)``
evaluates it against a message's properties. Semantics follow Java's:
three-valued logic (an absent property is NULL, which makes comparisons
unknown and never matches); property values are strings, converted to the
type of the literal they are compared with (``a > 5`` compares ``a`` as a
long, a value that does not convert makes the message not match); two
strings compare with ``<``/``>`` only when both parse as numbers; ``IN``
takes string literals; a bare property used as a condition is false.
"""
from __future__ import annotations

import re
from typing import Callable, Mapping

from rocketmq_py.errors import InvalidSelectorError

Value = object
Properties = Mapping[str, str]
Evaluator = Callable[[Properties], Value]

_TOKEN = re.compile(
    r"""(?P<space>\s+|--[^\n\r]*(?:\r\n|\n|\r)|/\*.*?\*/)
    |(?P<float>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
    |(?P<decimal>(?:0|[1-9]\d*)[lL]?)
    |(?P<string>'(?:''|[^'])*')
    |(?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
    |(?P<op><>|>=|<=|[=<>(),+-])""",
    re.VERBOSE | re.DOTALL,
)
_KEYWORDS = {"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"}
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


class EvaluationError(Exception):
    """A value could not be converted for a comparison; the message does not match."""


class _Property:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, properties: Properties) -> Value:
        return properties.get(self.name)


def _constant(value: Value) -> Evaluator:
    return lambda properties: value


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise InvalidSelectorError(f"the SQL92 expression {text!r} has an unexpected character "
                                       f"{text[position]!r} at position {position}")
        position = match.end()
        kind = match.lastgroup
        if kind == "space":
            continue
        value = match.group()
        if kind == "id" and value.upper() in _KEYWORDS:
            tokens.append(("kw", value.upper()))
        else:
            tokens.append((kind or "", value))
    return tokens


# --- value conversion (ComparisonExpression.__compare with string conversion on) ------------------------


def _to_number_like(text: str, like: Value) -> Value:
    try:
        if isinstance(like, bool):
            return text.lower() == "true"
        if isinstance(like, int):
            value = int(text.strip())
            if not _LONG_MIN <= value <= _LONG_MAX:
                raise ValueError(text)
            return value
        if isinstance(like, float):
            return float(text)
    except ValueError:
        raise EvaluationError(f"{text!r} is not a {type(like).__name__}") from None
    return text


def _compare(left: Value, right: Value) -> int | None:
    """Java's __compare: <0, 0, >0; None when the types cannot be compared (Java answers -1 then)."""
    if type(left) is not type(right):
        if isinstance(left, str) and not isinstance(right, str):
            left = _to_number_like(left, right)
        elif isinstance(right, str) and not isinstance(left, str):
            if isinstance(left, bool):
                return None
            right = _to_number_like(right, left)
        elif isinstance(left, bool) or isinstance(right, bool):
            return None
    if isinstance(left, bool) and isinstance(right, bool):
        return (left > right) - (left < right)
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return (left > right) - (left < right)
    if isinstance(left, str) and isinstance(right, str):
        return (left > right) - (left < right)
    return None  # NULL, or values of kinds that do not order


def _equal(left: Evaluator, right: Evaluator) -> Evaluator:
    def evaluate(properties: Properties) -> Value:
        lv, rv = left(properties), right(properties)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv == rv and type(lv) is type(rv):
            return True
        if lv is None:
            return True
        result = _compare(lv, rv)
        return result == 0 if result is not None else False
    return evaluate


def _ordering(left: Evaluator, right: Evaluator, test: Callable[[int], bool]) -> Evaluator:
    def evaluate(properties: Properties) -> Value:
        lv = left(properties)
        if lv is None:
            return None
        rv = right(properties)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            try:
                lv, rv = float(lv), float(rv)
            except ValueError:
                raise EvaluationError(f"strings {lv!r} and {rv!r} cannot be compared by order") from None
        result = _compare(lv, rv)
        return test(result if result is not None else -1)
    return evaluate


def _not(operand: Evaluator) -> Evaluator:
    def evaluate(properties: Properties) -> Value:
        value = operand(properties)
        return None if value is None else not value
    return evaluate


def _and(left: Evaluator, right: Evaluator) -> Evaluator:
    def evaluate(properties: Properties) -> Value:
        lv = left(properties)
        if lv is False:
            return False
        rv = right(properties)
        if rv is False:
            return False
        return None if lv is None or rv is None else True
    return evaluate


def _or(left: Evaluator, right: Evaluator) -> Evaluator:
    def evaluate(properties: Properties) -> Value:
        lv = left(properties)
        if lv is True:
            return True
        rv = right(properties)
        if rv is True:
            return True
        return None if lv is None or rv is None else False
    return evaluate


def _boolean(expression: Evaluator) -> Evaluator:
    """A property used as a condition: true only if its value were a boolean (property values are strings)."""
    if not isinstance(expression, _Property):
        return expression

    def evaluate(properties: Properties) -> Value:
        value = expression(properties)
        return None if value is None else (value if isinstance(value, bool) else False)
    return evaluate


def _negate(operand: Evaluator) -> Evaluator:
    def evaluate(properties: Properties) -> Value:
        value = operand(properties)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
        return None if value is None else value
    return evaluate


def _in(operand: _Property, values: list[str], negated: bool) -> Evaluator:
    members = frozenset(values)

    def evaluate(properties: Properties) -> Value:
        value = operand(properties)
        if not isinstance(value, str):
            return None
        return (value in members) != negated
    return evaluate


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.index = 0

    def fail(self, expected: str) -> InvalidSelectorError:
        found = repr(self.tokens[self.index][1]) if self.index < len(self.tokens) else "the end"
        return InvalidSelectorError(f"the SQL92 expression {self.text!r} is not valid: expected {expected}, "
                                    f"found {found}")

    def peek(self, ahead: int = 0) -> tuple[str, str] | None:
        position = self.index + ahead
        return self.tokens[position] if position < len(self.tokens) else None

    def accept(self, kind: str, value: str | None = None) -> bool:
        token = self.peek()
        if token is not None and token[0] == kind and (value is None or token[1] == value):
            self.index += 1
            return True
        return False

    def expect(self, kind: str, value: str | None = None, what: str | None = None) -> str:
        token = self.peek()
        if not self.accept(kind, value):
            raise self.fail(what or value or kind)
        assert token is not None
        return token[1]

    def parse(self) -> Evaluator:
        if not self.tokens:
            raise InvalidSelectorError("the SQL92 expression is empty")
        expression = _boolean(self.or_expression())
        if self.index != len(self.tokens):
            raise self.fail("AND, OR or the end")
        return expression

    def or_expression(self) -> Evaluator:
        left = self.and_expression()
        while self.accept("kw", "OR"):
            left = _or(_boolean(left), _boolean(self.and_expression()))
        return left

    def and_expression(self) -> Evaluator:
        left = self.equality()
        while self.accept("kw", "AND"):
            left = _and(_boolean(left), _boolean(self.equality()))
        return left

    def equality(self) -> Evaluator:
        left = self.comparison()
        while True:
            if self.accept("op", "="):
                left = _equal(left, self.comparison())
            elif self.accept("op", "<>"):
                left = _not(_equal(left, self.comparison()))
            elif self.accept("kw", "IS"):
                negated = self.accept("kw", "NOT")
                self.expect("kw", "NULL")
                left = _equal(left, _constant(None))
                if negated:
                    left = _not(left)
            else:
                return left

    def comparison(self) -> Evaluator:
        left = self.unary()
        while True:
            token = self.peek()
            tests = {">": lambda r: r > 0, ">=": lambda r: r >= 0, "<": lambda r: r < 0, "<=": lambda r: r <= 0}
            if token is not None and token[0] == "op" and token[1] in tests:
                self.index += 1
                left = _ordering(left, self.unary(), tests[token[1]])
            elif token == ("kw", "BETWEEN") or (token == ("kw", "NOT") and self.peek(1) == ("kw", "BETWEEN")):
                negated = token[1] == "NOT"
                self.index += 2 if negated else 1
                low = self.unary()
                self.expect("kw", "AND")
                high = self.unary()
                if negated:
                    left = _or(_ordering(left, low, tests["<"]), _ordering(left, high, tests[">"]))
                else:
                    left = _and(_ordering(left, low, tests[">="]), _ordering(left, high, tests["<="]))
            elif token == ("kw", "IN") or (token == ("kw", "NOT") and self.peek(1) == ("kw", "IN")):
                negated = token[1] == "NOT"
                self.index += 2 if negated else 1
                if not isinstance(left, _Property):
                    raise InvalidSelectorError(f"the SQL92 expression {self.text!r} is not valid: IN needs a "
                                               "property on its left")
                self.expect("op", "(")
                values = [self.string_literal()]
                while self.accept("op", ","):
                    values.append(self.string_literal())
                self.expect("op", ")")
                left = _in(left, values, negated)
            else:
                return left

    def string_literal(self) -> str:
        text = self.expect("string", what="a string literal")
        return text[1:-1].replace("''", "'")

    def unary(self) -> Evaluator:
        if self.accept("op", "+"):
            return self.unary()
        if self.accept("op", "-"):
            return _negate(self.unary())
        if self.accept("kw", "NOT"):
            return _not(_boolean(self.unary()))
        return self.primary()

    def primary(self) -> Evaluator:
        if self.accept("op", "("):
            inner = self.or_expression()
            self.expect("op", ")")
            return inner
        token = self.peek()
        if token is None:
            raise self.fail("a property, a literal or '('")
        kind, text = token
        self.index += 1
        if kind == "string":
            return _constant(text[1:-1].replace("''", "'"))
        if kind == "decimal":
            value = int(text.rstrip("lL"))
            if value > _LONG_MAX:
                raise InvalidSelectorError(f"the number {text} in {self.text!r} is too large for a long")
            return _constant(value)
        if kind == "float":
            return _constant(float(text))
        if kind == "id":
            return _Property(text)
        if token == ("kw", "TRUE"):
            return _constant(True)
        if token == ("kw", "FALSE"):
            return _constant(False)
        if token == ("kw", "NULL"):
            return _constant(None)
        self.index -= 1
        raise self.fail("a property, a literal or '('")


class Sql92Selector:
    """A compiled selector; :meth:`matches` tells whether a message with ``properties`` is selected."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self._evaluate = _Parser(expression).parse()

    def evaluate(self, properties: Properties) -> Value:
        return self._evaluate(properties)

    def matches(self, properties: Properties) -> bool:
        try:
            return self._evaluate(properties) is True
        except EvaluationError:
            return False


def compile_sql92(expression: str) -> Sql92Selector:
    """Parse ``expression``; raises :class:`InvalidSelectorError` with what is wrong."""
    return Sql92Selector(expression)
