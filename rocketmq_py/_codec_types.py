"""Plain classes that both codec implementations build, so callers see one type.

Ports the data model of Java's ``RemotingCommand`` (remoting/protocol) without
its behaviour: encoding and decoding live in ``_codec`` and ``_codec_py``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple, Protocol

SERIALIZE_JSON = 0
SERIALIZE_ROCKETMQ = 1

FLAG_RESPONSE = 0x1
FLAG_ONEWAY = 0x2

#: Java's LanguageCode enum, in ordinal order (the ordinal is the binary code byte).
LANGUAGE_NAMES = (
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
    "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST",
)
LANGUAGE_CODES = {name: code for code, name in enumerate(LANGUAGE_NAMES)}
LANGUAGE_JAVA = 0
LANGUAGE_PYTHON = 3
LANGUAGE_OTHER = 7

#: The MQVersion ordinal of RocketMQ 4.9.8, which this implementation speaks.
VERSION_4_9_8 = 409


class WireExt(Protocol):
    """A decoded frame's ext block kept as it came (the compiled codec's ``WireExtFields``)."""

    def fields(self) -> dict[str, str]: ...


class HeaderObject(Protocol):
    """What a command's ``custom_header`` is: a ``common.headers`` header (this module imports none of them)."""

    def to_ext_fields(self) -> dict[str, str]: ...


class RemotingCommand:
    """One request or response frame.

    ``ext_fields`` holds the custom header as strings, exactly as on the wire;
    ``body`` is ``None`` when the frame has no body (Java turns an empty body
    into null too).

    A command being sent may instead carry its header object as
    ``custom_header`` (Java's ``customHeader``): the encoder writes its fields
    straight into the frame, with no string dict in between. The frame's
    extFields are then the header's fields followed by ``ext_fields`` (an
    entry of ``ext_fields`` replaces a header field of the same name), which
    :meth:`wire_ext_fields` spells out and :meth:`make_custom_header_to_net`
    makes the command's own ``ext_fields`` before anything reads or signs them.
    Decoded commands never carry one.

    A command the compiled codec decoded from a ROCKETMQ-serialized frame keeps
    its ext block as it came (``_wire_ext``) and makes ``ext_fields`` from it on
    first use: a header class's ``from_command`` reads its fields straight from
    those bytes, so the common request never builds the dict at all.
    """

    #: The command's fields, in constructor order (``ext_fields`` is a property over two slots).
    FIELDS = (
        "code", "language", "version", "opaque", "flag",
        "remark", "ext_fields", "body", "serialize_type", "custom_header",
    )
    __slots__ = (
        "code", "language", "version", "opaque", "flag",
        "remark", "_ext_fields", "body", "serialize_type", "custom_header", "_wire_ext",
    )

    def __init__(
        self,
        code: int = 0,
        language: int = LANGUAGE_PYTHON,
        version: int = VERSION_4_9_8,
        opaque: int = 0,
        flag: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes | None = None,
        serialize_type: int = SERIALIZE_JSON,
        custom_header: HeaderObject | None = None,
    ) -> None:
        self.code = code
        self.language = language
        self.version = version
        self.opaque = opaque
        self.flag = flag
        self.remark = remark
        self._ext_fields = ext_fields
        self.body = body
        self.serialize_type = serialize_type
        self.custom_header = custom_header
        self._wire_ext: WireExt | None = None

    @property
    def ext_fields(self) -> dict[str, str] | None:
        """The custom header as strings, exactly as on the wire (``None`` when the frame had none)."""
        wire = self._wire_ext
        if wire is not None:
            self._ext_fields = wire.fields()
            self._wire_ext = None
        return self._ext_fields

    @ext_fields.setter
    def ext_fields(self, fields: dict[str, str] | None) -> None:
        self._ext_fields = fields
        self._wire_ext = None

    def wire_ext_fields(self) -> dict[str, str] | None:
        """The extFields the frame carries: ``custom_header``'s fields, then ``ext_fields``."""
        header = self.custom_header
        if header is None:
            return self.ext_fields
        fields = header.to_ext_fields()
        if self.ext_fields:
            fields.update(self.ext_fields)
        return fields

    def make_custom_header_to_net(self) -> None:
        """Move ``custom_header``'s fields into ``ext_fields`` (Java's ``makeCustomHeaderToNet``).

        Call it before code that reads the outgoing strings, as Java's ACL hook
        does before signing; the frame's bytes stay the same.
        """
        if self.custom_header is not None:
            self.ext_fields = self.wire_ext_fields()
            self.custom_header = None

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemotingCommand):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        body = "None" if self.body is None else f"<{len(self.body)} bytes>"
        kind = "response" if self.is_response else ("oneway" if self.is_oneway else "request")
        header = "" if self.custom_header is None else f" custom_header={self.custom_header!r}"
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque} flag={self.flag} "
            f"language={self.language} version={self.version} remark={self.remark!r} "
            f"ext_fields={self.ext_fields!r}{header} body={body} serialize_type={self.serialize_type})"
        )


class JsonObjectKey(tuple[Any, ...]):
    """A JSON object used as a map key, as fastjson writes ``Map<MessageQueue, Long>``.

    It is a hashable, ordered tuple of ``(name, value)`` pairs; :meth:`to_dict`
    gives the object back.
    """

    __slots__ = ()

    def __new__(cls, items: Iterable[tuple[str, object]] | dict[str, Any]) -> "JsonObjectKey":
        pairs = items.items() if isinstance(items, dict) else items
        frozen = ((str(k), _freeze(v)) for k, v in pairs)
        return super().__new__(cls, tuple(sorted(frozen, key=_pair_name)))

    def to_dict(self) -> dict[str, Any]:
        return dict(self)

    def __repr__(self) -> str:
        return f"JsonObjectKey({dict(self)!r})"


def _pair_name(pair: tuple[str, object]) -> str:
    return pair[0]


def _freeze(value: object) -> object:
    if isinstance(value, dict):
        return JsonObjectKey(value)
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


#: Kinds of a header field in a :class:`HeaderPlan` entry.
HEADER_STR, HEADER_INT, HEADER_BOOL, HEADER_FLOAT = 0, 1, 2, 3


class HeaderPlan(NamedTuple):
    """How one header dataclass maps to extFields, built once per class by ``common.headers.base``.

    ``entries`` holds ``(attribute, wire name, kind, required, bits, strict)`` per field, in
    declaration order (``strict``: a number that does not parse refuses the request). The three
    callables handle what the fast path leaves to Python: ``missing(cls, name)`` raises for an absent
    required field; ``slow_int(cls, name, text, bits, strict)`` reads a number that is not plain
    short ASCII digits, returning ``None`` to keep the default or raising when ``strict``;
    ``bad_float(cls, name, text)`` notes a float that does not parse (its default stays).
    """

    entries: tuple[tuple[str, str, int, bool, int, bool], ...]
    defaults: dict[str, Any]
    missing: Callable[[type, str], None]
    slow_int: Callable[[type, str, Any, int, bool], int | None]
    bad_float: Callable[[type, str, Any], None]


#: The plan of each header class, filled by ``common.headers.base`` (a subclass has its own fields, so plans are
#: not inherited); kept here so that the encoders find a custom header's plan without importing the headers.
HEADER_PLANS: dict[type, HeaderPlan] = {}

#: The wire names of the header plans, each the very str object its plan looks fields up with: the compiled decoders
#: hand out these objects for extFields keys of the same text, so that a plan's lookups match by identity.
WIRE_NAMES: dict[str, str] = {}
