"""The byte-level codec of RocketMQ 4.9, in pure Python.

This module is the readable specification and the oracle for ``_codec.pyx``:
both implement the same functions with the same results and the same errors.
Layouts follow Java's ``RemotingCommand``, ``RocketMQSerializable``,
``NettyDecoder``, ``MessageDecoder``, ``MessageClientIDSetter`` and
``UtilAll`` (tag rocketmq-all-4.9.8); see ``docs`` of each function.
"""
from __future__ import annotations

import datetime
import ipaddress
import itertools
import json
import os
import struct
import zlib
from typing import Any, Iterable, Mapping

from rocketmq_py._codec_types import (
    HEADER_BOOL,
    HEADER_INT,
    HEADER_PLANS,
    HEADER_STR,
    LANGUAGE_CODES,
    LANGUAGE_NAMES,
    LANGUAGE_OTHER,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    HeaderObject,
    HeaderPlan,
    RemotingCommand,
)
# The fastjson-compatible JSON has a module of its own, as the compiled codec has an include file; its names
# are the twin's too.
from rocketmq_py._codec_py_fastjson import MAX_JSON_DEPTH as MAX_JSON_DEPTH
from rocketmq_py._codec_py_fastjson import json_dumps as json_dumps
from rocketmq_py._codec_py_fastjson import json_loads as json_loads
from rocketmq_py.common import clock
from rocketmq_py.common.magic_codes import MESSAGE_MAGIC_CODE
from rocketmq_py.common.sysflag import (
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    COMPRESSION_TYPE_SHIFT,
    STOREHOSTADDRESS_V6_FLAG,
)
from rocketmq_py.common.message import MessageExt
from rocketmq_py.errors import CodecError, FrameTooLargeError

IMPLEMENTATION = "python"

#: Netty's LengthFieldBasedFrameDecoder limit in Java: a frame is refused when
#: its length value plus the 4 length bytes exceeds this.
MAX_FRAME_LENGTH = 16 * 1024 * 1024

#: Decompressed bodies larger than this are refused, so that a small
#: compressed body cannot exhaust memory.
MAX_DECOMPRESSED_SIZE = 128 * 1024 * 1024

PROPERTY_NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

COMPRESSION_LZ4 = 1
COMPRESSION_ZSTD = 2
COMPRESSION_ZLIB = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_BINARY_HEADER_FIXED = struct.Struct(">hbhiii")  # code, language, version, opaque, flag, remark length
_BATCH_ITEM_HEAD = struct.Struct(">iiiii")  # total size, magic, body crc, flag, body length
_STORE_HEAD = struct.Struct(">iiiiiqqiq")  # size, magic, crc, queue id, flag, queue offset, phys offset, sysflag, born ts


def _int16(value: int) -> int:
    """Java's ``(short) value``."""
    return ((value + 0x8000) & 0xFFFF) - 0x8000


def _int32(value: int) -> int:
    """Java's ``(int) value``."""
    return ((value + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def _int64(value: int) -> int:
    return ((value + 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF) - 0x8000000000000000


# --- frames -------------------------------------------------------------------


def new_command(code: int, language: int, version: int, opaque: int, flag: int, remark: str | None,
                ext_fields: dict[str, str] | None, body: bytes | None, serialize_type: int,
                custom_header: HeaderObject | None) -> RemotingCommand:
    """``RemotingCommand`` with every field given in order (the request factories build one per request)."""
    return RemotingCommand(code, language, version, opaque, flag, remark, ext_fields, body, serialize_type,
                           custom_header)


def encode_command(cmd: RemotingCommand) -> bytes:
    """The whole frame of ``cmd``, length prefix included, ready for one write."""
    if cmd.serialize_type == SERIALIZE_JSON:
        header = encode_json_header(cmd)
    elif cmd.serialize_type == SERIALIZE_ROCKETMQ:
        header = encode_rocketmq_header(cmd)
    else:
        raise CodecError(f"unknown serialize type {cmd.serialize_type}: use 0 (JSON) or 1 (ROCKETMQ)")
    body = cmd.body or b""
    header_length = len(header)
    if header_length > 0xFFFFFF:
        raise CodecError(f"header of {header_length} bytes does not fit the 24-bit header length")
    total = 4 + header_length + memoryview(body).nbytes
    if total + 4 > MAX_FRAME_LENGTH:
        raise FrameTooLargeError(f"frame of {total + 4} bytes exceeds the {MAX_FRAME_LENGTH} byte limit")
    return b"".join((
        _INT32.pack(total),
        _UINT32.pack((cmd.serialize_type << 24) | header_length),
        header,
        body,
    ))


def decode_frame(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one frame whose 4-byte length prefix was already stripped."""
    frame = bytes(frame)
    if len(frame) < 4:
        raise CodecError(f"frame of {len(frame)} bytes is shorter than its 4-byte header length field")
    (field,) = _UINT32.unpack_from(frame, 0)
    serialize_type = field >> 24
    header_length = field & 0xFFFFFF
    if header_length > len(frame) - 4:
        raise CodecError(f"header length {header_length} exceeds the {len(frame) - 4} bytes left in the frame")
    header = frame[4:4 + header_length]
    if serialize_type == SERIALIZE_JSON:
        cmd = decode_json_header(header)
    elif serialize_type == SERIALIZE_ROCKETMQ:
        cmd = decode_rocketmq_header(header)
    else:
        raise CodecError(f"unknown serialize type {serialize_type} in the header length field")
    body = frame[4 + header_length:]
    cmd.body = body if body else None
    return cmd


class FrameDecoder:
    """Cuts a byte stream into commands, fed with chunks of any size.

    After an error the decoder stays broken: the connection must be closed,
    as Java's NettyDecoder closes the channel.
    """

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
        self.max_frame_length = max_frame_length
        self._buffer = bytearray()
        self._failed: CodecError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        if self._failed is not None:
            raise self._failed
        buffer = self._buffer
        buffer += data
        commands = []
        position = 0
        available = len(buffer)
        try:
            while available - position >= 4:
                (length,) = _INT32.unpack_from(buffer, position)
                if length < 0:
                    raise CodecError(f"negative frame length {length}")
                if length + 4 > self.max_frame_length:
                    raise FrameTooLargeError(
                        f"frame length {length} + 4 exceeds the limit of {self.max_frame_length} bytes"
                    )
                end = position + 4 + length
                if end > available:
                    break
                commands.append(decode_frame(bytes(buffer[position + 4:end])))
                position = end
        except CodecError as error:
            self._failed = error
            buffer.clear()
            raise
        if position:
            del buffer[:position]
        return commands


# --- JSON header ----------------------------------------------------------------


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """The header as fastjson writes it: sorted keys, nulls left out."""
    parts = ['{"code":', str(_int32(cmd.code))]
    ext_fields = cmd.wire_ext_fields()
    if ext_fields is not None:
        parts.append(',"extFields":')
        parts.append(_json_string_map(ext_fields))
    parts.append(',"flag":')
    parts.append(str(_int32(cmd.flag)))
    parts.append(',"language":"')
    parts.append(_language_name(cmd.language))
    parts.append('","opaque":')
    parts.append(str(_int32(cmd.opaque)))
    if cmd.remark is not None:
        parts.append(',"remark":')
        parts.append(_json_str(cmd.remark))
    parts.append(',"serializeTypeCurrentRPC":"JSON","version":')
    parts.append(str(_int32(cmd.version)))
    parts.append("}")
    return "".join(parts).encode("utf-8", "surrogatepass")


def decode_json_header(header: bytes) -> RemotingCommand:
    header = bytes(header)
    try:
        data = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CodecError(f"JSON header is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise CodecError("JSON header is not an object")
    cmd = RemotingCommand(serialize_type=SERIALIZE_JSON)
    cmd.code = _json_int(data, "code", 0)
    cmd.version = _json_int(data, "version", 0)
    cmd.opaque = _json_int(data, "opaque", 0)
    cmd.flag = _json_int(data, "flag", 0)
    language = data.get("language")
    if language is None:
        cmd.language = 0
    elif isinstance(language, str):
        cmd.language = LANGUAGE_CODES.get(language, LANGUAGE_OTHER)
    elif isinstance(language, int) and not isinstance(language, bool):
        cmd.language = language & 0xFF
    else:
        raise CodecError(f"JSON header field 'language' has a bad value {language!r}")
    remark = data.get("remark")
    if remark is not None and not isinstance(remark, str):
        raise CodecError("JSON header field 'remark' is not a string")
    cmd.remark = remark
    ext = data.get("extFields")
    if ext is None:
        cmd.ext_fields = None
    elif isinstance(ext, dict):
        fields = {}
        for key, value in ext.items():
            if value is None:
                continue
            fields[key] = _json_scalar_text(key, value)
        cmd.ext_fields = fields
    else:
        raise CodecError("JSON header field 'extFields' is not an object")
    return cmd


def _json_int(data: dict[str, Any], name: str, default: int) -> int:
    value = data.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodecError(f"JSON header field {name!r} is not an integer: {value!r}")
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise CodecError(f"JSON header field {name!r} is out of the int32 range: {value}")
    return value


def _json_scalar_text(key: str, value: object) -> str:
    """An extFields value as Java's String map would hold it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)  # an IntEnum's digits, on every Python
    if isinstance(value, float):
        return float.__repr__(value)
    raise CodecError(f"extFields value of {key!r} is not a string: {value!r}")


def _language_name(language: int) -> str:
    if 0 <= language < len(LANGUAGE_NAMES):
        return LANGUAGE_NAMES[language]
    return "OTHER"


def _json_str(text: str) -> str:
    if not isinstance(text, str):
        raise CodecError(f"expected a string, got {type(text).__name__}")
    return json.dumps(text, ensure_ascii=False)


def _json_string_map(fields: Mapping[str, str]) -> str:
    items = []
    for key, value in fields.items():
        if key is None or value is None:
            continue
        items.append(_json_str(key) + ":" + _json_str(value))
    return "{" + ",".join(items) + "}"


# --- ROCKETMQ binary header -------------------------------------------------------


def encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    """The binary header of RocketMQSerializable: 21 fixed bytes, remark, ext map."""
    remark = cmd.remark.encode("utf-8", "surrogatepass") if cmd.remark else b""
    ext = bytearray()
    ext_fields = cmd.wire_ext_fields()
    if ext_fields:
        for key, value in ext_fields.items():
            if key is None or value is None:
                continue
            if not isinstance(key, str) or not isinstance(value, str):
                raise CodecError(f"extFields entries must be strings, got {key!r}: {value!r}")
            key_bytes = key.encode("utf-8", "surrogatepass")
            value_bytes = value.encode("utf-8", "surrogatepass")
            if len(key_bytes) > 0x7FFF:
                raise CodecError(f"extFields key of {len(key_bytes)} bytes exceeds the int16 length")
            ext += _INT16.pack(len(key_bytes))
            ext += key_bytes
            ext += _INT32.pack(len(value_bytes))
            ext += value_bytes
    if not 0 <= cmd.language <= 0xFF:
        raise CodecError(f"language code {cmd.language} does not fit a byte")
    return b"".join((
        _BINARY_HEADER_FIXED.pack(
            _int16(cmd.code), cmd.language - 256 if cmd.language > 127 else cmd.language,
            _int16(cmd.version), _int32(cmd.opaque), _int32(cmd.flag), len(remark),
        ),
        remark,
        _INT32.pack(len(ext)),
        bytes(ext),
    ))


def decode_rocketmq_header(header: bytes) -> RemotingCommand:
    """Decode the binary header; lengths are bounded by the header, and empty strings read as absent."""
    header = bytes(header)
    limit = len(header)
    if limit < 21:
        raise CodecError(f"ROCKETMQ header of {limit} bytes is shorter than its 21 fixed bytes")
    code, language, version, opaque, flag, remark_length = _BINARY_HEADER_FIXED.unpack_from(header, 0)
    position = 17
    cmd = RemotingCommand(
        code=code, language=language & 0xFF, version=version, opaque=opaque, flag=flag,
        serialize_type=SERIALIZE_ROCKETMQ,
    )
    if remark_length < 0 or remark_length > limit - position:
        raise CodecError(f"remark length {remark_length} does not fit the header")
    if remark_length:
        cmd.remark = _utf8(header[position:position + remark_length])
        position += remark_length
    if limit - position < 4:
        raise CodecError("ROCKETMQ header ends before its extFields length")
    (ext_length,) = _INT32.unpack_from(header, position)
    position += 4
    if ext_length < 0 or ext_length > limit - position:
        raise CodecError(f"extFields length {ext_length} does not fit the header")
    if ext_length > 0:
        fields: dict[str, str] = {}
        end = position + ext_length
        while position < end:
            if end - position < 2:
                raise CodecError("extFields entry ends before its key length")
            (key_length,) = _INT16.unpack_from(header, position)
            position += 2
            if key_length < 0 or key_length > end - position:
                raise CodecError(f"extFields key length {key_length} does not fit the header")
            key = header[position:position + key_length]
            position += key_length
            if end - position < 4:
                raise CodecError("extFields entry ends before its value length")
            (value_length,) = _INT32.unpack_from(header, position)
            position += 4
            if value_length < 0 or value_length > end - position:
                raise CodecError(f"extFields value length {value_length} does not fit the header")
            value = header[position:position + value_length]
            position += value_length
            if key_length and value_length:
                fields[_utf8(key)] = _utf8(value)
            elif key_length:
                # Java reads an empty value as null, and the last put of a duplicate key wins.
                fields.pop(_utf8(key), None)
        cmd.ext_fields = fields
    return cmd


# --- Header objects and extFields --------------------------------------------------------------------------

#: Longest ASCII digit strings that always fit a Java int / long: read without a range check.
_SAFE_DIGITS = {32: 9, 64: 18}


def header_to_fields(header: object, plan: HeaderPlan) -> dict[str, str]:
    """extFields of a header dataclass, written as Java's ``toString()`` writes them; ``None`` fields are left out."""
    fields: dict[str, str] = {}
    for attribute, name, kind, _required, _bits, _strict in plan.entries:
        value = getattr(header, attribute)
        if value is None:
            continue
        if kind == HEADER_BOOL:
            fields[name] = "true" if value else "false"
        elif kind == HEADER_STR and value.__class__ is str:
            fields[name] = value
        elif isinstance(value, int) and not isinstance(value, bool):
            fields[name] = int.__repr__(value)  # an IntEnum's digits: its str() is its name before Python 3.11
        else:
            fields[name] = str(value)
    return fields


def header_from_fields(cls: type, fields: Mapping[str, Any] | None, plan: HeaderPlan) -> Any:
    """The header dataclass ``cls`` read from extFields as Java reads them (see ``common.headers.base``).

    The instance is made without calling ``__init__`` (header dataclasses have no ``__post_init__``):
    every field's slot gets its value or its default, in declaration order.
    """
    get = (fields or {}).get
    values = dict(plan.defaults)
    for attribute, name, kind, required, bits, strict in plan.entries:
        text = get(name)
        if text is None:
            if required:
                plan.missing(cls, name)
            continue
        if kind == HEADER_STR:
            values[attribute] = text
        elif kind == HEADER_INT:
            # Plain ASCII digits short enough to fit are the traffic; anything else takes the full Java check.
            if text.__class__ is str and text.isascii() and text.isdigit() and 0 < len(text) <= _SAFE_DIGITS[bits]:
                values[attribute] = int(text)
            else:
                number = plan.slow_int(cls, name, text, bits, strict)
                if number is not None:
                    values[attribute] = number
        elif kind == HEADER_BOOL:
            values[attribute] = text.lower() == "true"
        else:  # HEADER_FLOAT
            try:
                values[attribute] = float(text)
            except ValueError:
                plan.bad_float(cls, name, text)
    header: Any = object.__new__(cls)
    for attribute, value in values.items():
        setattr(header, attribute, value)
    return header


def header_fields(header: Any) -> dict[str, str]:
    """``header_to_fields`` with the plan of the header's class: ``CommandHeader.to_ext_fields`` itself."""
    return header_to_fields(header, _plan_of(type(header)))


def read_header(cls: Any, fields: Mapping[str, Any] | None) -> Any:
    """``header_from_fields`` with the plan of ``cls``: ``CommandHeader.from_ext_fields`` itself."""
    return header_from_fields(cls, fields, _plan_of(cls))


def read_command_header(cls: Any, cmd: RemotingCommand) -> Any:
    """``read_header(cls, cmd.ext_fields)``: ``CommandHeader.from_command`` itself (Java's ``decodeCommandCustomHeader``)."""
    return header_from_fields(cls, cmd.ext_fields, _plan_of(cls))


def _plan_of(cls: Any) -> HeaderPlan:
    plan = HEADER_PLANS.get(cls)
    if plan is None:
        plan = cls._plan()
    return plan


def _utf8(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# --- message properties -------------------------------------------------------------


def properties_to_string(properties: Mapping[str, str] | None) -> str:
    """``name\\x01value`` pairs joined by ``\\x02``; entries with a None value are left out."""
    if not properties:
        return ""
    return PROPERTY_SEPARATOR.join(
        name + PROPERTY_NAME_VALUE_SEPARATOR + value
        for name, value in properties.items()
        if value is not None
    )


def string_to_properties(text: str | None) -> dict[str, str]:
    """Parse a properties string; entries with an empty name or value are dropped, as Java does."""
    result: dict[str, str] = {}
    if not text:
        return result
    for segment in text.split(PROPERTY_SEPARATOR):
        separator = segment.find(PROPERTY_NAME_VALUE_SEPARATOR)
        if 0 < separator < len(segment) - 1:
            result[segment[:separator]] = segment[separator + 1:]
    return result


def _properties_bytes(properties: Mapping[str, str] | str | None) -> bytes:
    text = properties if isinstance(properties, str) else properties_to_string(properties)
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > 0x7FFF:
        raise CodecError(f"properties of {len(data)} bytes exceed the 32767 byte limit")
    return data


# --- batch bodies ---------------------------------------------------------------------


def encode_batch(messages: Iterable[tuple[int, bytes, Mapping[str, str]]]) -> bytes:
    """The SEND_BATCH_MESSAGE body: one ``(flag, body, properties)`` item after another."""
    parts = []
    for flag, body, properties in messages:
        body = bytes(body)
        props = _properties_bytes(properties)
        size = 20 + len(body) + 2 + len(props)
        parts.append(_BATCH_ITEM_HEAD.pack(size, 0, 0, _int32(flag), len(body)))
        parts.append(body)
        parts.append(_INT16.pack(len(props)))
        parts.append(props)
    return b"".join(parts)


def decode_batch(data: bytes) -> list[tuple[int, bytes, dict[str, str]]]:
    data = bytes(data)
    items = []
    position = 0
    end = len(data)
    while position < end:
        if end - position < 20:
            raise CodecError(f"batch item at {position} ends before its 20-byte head")
        _size, _magic, _crc, flag, body_length = _BATCH_ITEM_HEAD.unpack_from(data, position)
        position += 20
        if body_length < 0 or body_length > end - position:
            raise CodecError(f"batch body length {body_length} at {position - 4} does not fit the data")
        body = data[position:position + body_length]
        position += body_length
        if end - position < 2:
            raise CodecError("batch item ends before its properties length")
        (props_length,) = _INT16.unpack_from(data, position)
        position += 2
        if props_length < 0 or props_length > end - position:
            raise CodecError(f"batch properties length {props_length} does not fit the data")
        properties = string_to_properties(_utf8(data[position:position + props_length]))
        position += props_length
        items.append((flag, body, properties))
    return items


# --- compression --------------------------------------------------------------------------


def compression_type(sys_flag: int) -> int:
    """The compression type in sysFlag bits 8-10; 0 (old producers) means zlib."""
    kind = (sys_flag & COMPRESSION_TYPE_MASK) >> COMPRESSION_TYPE_SHIFT
    return COMPRESSION_ZLIB if kind in (0, COMPRESSION_ZLIB) else kind


def compress(body: bytes, kind: int = COMPRESSION_ZLIB, level: int = 5) -> bytes:
    """Compress as Java's producer does: zlib stream, LZ4 frame or zstd frame."""
    if kind == COMPRESSION_ZLIB:
        return zlib.compress(body, level)
    if kind == COMPRESSION_LZ4:
        import lz4.frame

        compressed: bytes = lz4.frame.compress(body, block_linked=False, store_size=False)
        return compressed
    if kind == COMPRESSION_ZSTD:
        import zstandard

        return zstandard.ZstdCompressor(level=level).compress(body)
    raise CodecError(f"unknown compression type {kind}: use 1 (LZ4), 2 (ZSTD) or 3 (ZLIB)")


def decompress(body: bytes, kind: int = COMPRESSION_ZLIB) -> bytes:
    try:
        if kind == COMPRESSION_ZLIB or kind == 0:
            inflater = zlib.decompressobj()
            result: bytes = inflater.decompress(body, MAX_DECOMPRESSED_SIZE)
            if inflater.unconsumed_tail:
                raise CodecError(f"decompressed body exceeds {MAX_DECOMPRESSED_SIZE} bytes")
            if not inflater.eof:
                raise CodecError("compressed body is truncated")
            return result
        if kind == COMPRESSION_LZ4:
            import lz4.frame

            inflater = lz4.frame.LZ4FrameDecompressor()
            result = inflater.decompress(body, max_length=MAX_DECOMPRESSED_SIZE)
            if not inflater.eof:
                if len(result) >= MAX_DECOMPRESSED_SIZE:
                    raise CodecError(f"decompressed body exceeds {MAX_DECOMPRESSED_SIZE} bytes")
                raise CodecError("compressed body is truncated")
            return result
        if kind == COMPRESSION_ZSTD:
            import zstandard

            # The one-shot call stops at max_output_size when the frame does not
            # declare its size, and refuses a truncated frame.
            if zstandard.frame_content_size(body) > MAX_DECOMPRESSED_SIZE:
                raise CodecError(f"decompressed body exceeds {MAX_DECOMPRESSED_SIZE} bytes")
            return zstandard.ZstdDecompressor().decompress(body, max_output_size=MAX_DECOMPRESSED_SIZE)
    except CodecError:
        raise
    except Exception as error:  # zlib.error, RuntimeError (lz4), ZstdError
        raise CodecError(f"body does not decompress as type {kind}: {error}") from None
    raise CodecError(f"unknown compression type {kind}")


# --- store records (pull, view and query bodies) -----------------------------------------


def _host_string(ip: bytes, port: int) -> str:
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    return f"[{ipaddress.IPv6Address(ip).compressed}]:{port}"


def decode_store_records(data: bytes, decompress_body: bool = True, strict: bool = True) -> list[MessageExt]:
    """Decode CommitLog records laid end to end, as a pull body carries them.

    With ``strict`` a malformed record raises :class:`CodecError`; without it
    decoding stops at the first bad record and returns what came before, as
    Java's ``MessageDecoder.decodes`` does.
    """
    data = bytes(data)
    messages = []
    position = 0
    end = len(data)
    while position < end:
        try:
            message, position = _decode_store_record(data, position, decompress_body)
        except CodecError:
            if strict:
                raise
            break
        messages.append(message)
    return messages


def _need(data: bytes, position: int, count: int, what: str) -> None:
    if count < 0 or len(data) - position < count:
        raise CodecError(f"store record ends inside {what} at byte {position}")


def _decode_store_record(data: bytes, position: int, decompress_body: bool) -> tuple[MessageExt, int]:
    _need(data, position, _STORE_HEAD.size, "its fixed head")
    (store_size, _magic, body_crc, queue_id, flag, queue_offset,
     physical_offset, sys_flag, born_timestamp) = _STORE_HEAD.unpack_from(data, position)
    position += _STORE_HEAD.size
    born_ip_length = 16 if sys_flag & BORNHOST_V6_FLAG else 4
    _need(data, position, born_ip_length + 4 + 8, "the born host")
    born_ip = data[position:position + born_ip_length]
    position += born_ip_length
    (born_port,) = _INT32.unpack_from(data, position)
    position += 4
    (store_timestamp,) = _INT64.unpack_from(data, position)
    position += 8
    store_ip_length = 16 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 4
    _need(data, position, store_ip_length + 4 + 4 + 8 + 4, "the store host")
    store_ip = data[position:position + store_ip_length]
    position += store_ip_length
    (store_port,) = _INT32.unpack_from(data, position)
    position += 4
    (reconsume_times,) = _INT32.unpack_from(data, position)
    position += 4
    (prepared_offset,) = _INT64.unpack_from(data, position)
    position += 8
    (body_length,) = _INT32.unpack_from(data, position)
    position += 4
    body = b""
    if body_length > 0:
        _need(data, position, body_length, "the body")
        body = data[position:position + body_length]
        position += body_length
        if decompress_body and sys_flag & COMPRESSED_FLAG:
            body = decompress(body, compression_type(sys_flag))
    _need(data, position, 1, "the topic length")
    topic_length = data[position]
    if topic_length > 127:
        raise CodecError(f"negative topic length {topic_length - 256} at byte {position}")
    position += 1
    _need(data, position, topic_length + 2, "the topic")
    topic = _utf8(data[position:position + topic_length])
    position += topic_length
    (props_length,) = _INT16.unpack_from(data, position)
    position += 2
    properties: dict[str, str] = {}
    if props_length > 0:
        _need(data, position, props_length, "the properties")
        properties = string_to_properties(_utf8(data[position:position + props_length]))
        position += props_length

    message = MessageExt(topic, body)
    message.store_size = store_size
    message.body_crc = body_crc
    message.queue_id = queue_id
    message.flag = flag
    message.queue_offset = queue_offset
    message.commit_log_offset = physical_offset
    message.sys_flag = sys_flag
    message.born_timestamp = born_timestamp
    message.born_host = _host_string(born_ip, born_port)
    message.store_timestamp = store_timestamp
    message.store_host = _host_string(store_ip, store_port)
    message.reconsume_times = reconsume_times
    message.prepared_transaction_offset = prepared_offset
    message.properties = properties
    message.offset_msg_id = (store_ip + _INT32.pack(store_port) + _INT64.pack(physical_offset)).hex().upper()
    return message, position


def _parse_host(host: str | tuple[str, int]) -> tuple[bytes, int]:
    """``"ip:port"``, ``"[v6]:port"`` or ``(ip, port)`` to (address bytes, port)."""
    if isinstance(host, tuple):
        ip, port = host
    else:
        ip, _, port_text = host.rpartition(":")
        port = int(port_text)
        ip = ip.strip("[]")
    try:
        return ipaddress.ip_address(ip).packed, port
    except ValueError:
        raise CodecError(f"not an IP address: {ip!r}") from None


def encode_store_record(
    *,
    topic: str,
    body: bytes,
    properties: Mapping[str, str] | str | None = None,
    queue_id: int = 0,
    flag: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: str | tuple[str, int] = "127.0.0.1:0",
    store_timestamp: int = 0,
    store_host: str | tuple[str, int] = "127.0.0.1:0",
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    body_crc: int | None = None,
) -> bytes:
    """One CommitLog record in the store layout (magic V1).

    The host-family bits of ``sys_flag`` follow the addresses given, and the
    body CRC is computed (masked as Java masks it) unless ``body_crc`` is given.
    """
    body = bytes(body)
    born_ip, born_port = _parse_host(born_host)
    store_ip, store_port = _parse_host(store_host)
    sys_flag &= ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
    if len(born_ip) == 16:
        sys_flag |= BORNHOST_V6_FLAG
    if len(store_ip) == 16:
        sys_flag |= STOREHOSTADDRESS_V6_FLAG
    topic_bytes = topic.encode("utf-8", "surrogatepass")
    if len(topic_bytes) > 127:
        raise CodecError(f"topic of {len(topic_bytes)} bytes exceeds the 127 byte limit")
    props = _properties_bytes(properties)
    size = (4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + len(born_ip) + 4 + 8 + len(store_ip) + 4 + 4 + 8
            + 4 + len(body) + 1 + len(topic_bytes) + 2 + len(props))
    crc = crc32_masked(body) if body_crc is None else body_crc
    return b"".join((
        _STORE_HEAD.pack(size, MESSAGE_MAGIC_CODE, _int32(crc), _int32(queue_id), _int32(flag),
                         _int64(queue_offset), _int64(physical_offset), _int32(sys_flag),
                         _int64(born_timestamp)),
        born_ip, _INT32.pack(_int32(born_port)),
        _INT64.pack(_int64(store_timestamp)),
        store_ip, _INT32.pack(_int32(store_port)),
        _INT32.pack(_int32(reconsume_times)),
        _INT64.pack(_int64(prepared_transaction_offset)),
        _INT32.pack(len(body)), body,
        bytes((len(topic_bytes),)), topic_bytes,
        _INT16.pack(len(props)), props,
    ))


# --- message ids -------------------------------------------------------------------------------


def create_offset_msg_id(host: str, port: int, offset: int) -> str:
    """The offset (store) message id: store IP, int32 port, int64 CommitLog offset, in upper hex."""
    ip, _ = _parse_host((host, port))
    return (ip + _INT32.pack(_int32(port)) + _INT64.pack(_int64(offset))).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """``(ip, port, offset)`` of an offset message id; 32 hex digits mean IPv4, as in Java."""
    raw = _hex_bytes(msg_id)
    ip_length = 4 if len(msg_id) == 32 else 16
    if len(raw) != ip_length + 12:
        raise CodecError(f"offset message id {msg_id!r} has {len(raw)} bytes, expected {ip_length + 12}")
    ip = ipaddress.ip_address(raw[:ip_length])
    (port,) = _INT32.unpack_from(raw, ip_length)
    (offset,) = _INT64.unpack_from(raw, ip_length + 4)
    return ip.compressed, port, offset


def _hex_bytes(text: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except (ValueError, TypeError):
        raise CodecError(f"message id {text!r} is not hexadecimal") from None


def _month_start_ms(now_ms: int) -> tuple[int, int]:
    """Local-time start of the month holding ``now_ms`` and of the next one, in ms."""
    # Naive local time, so that each month boundary gets its own UTC offset across daylight saving.
    now = datetime.datetime.fromtimestamp(now_ms / 1000)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (start + datetime.timedelta(days=32)).replace(day=1)
    return int(start.timestamp() * 1000), int(following.timestamp() * 1000)


class UniqueIdGenerator:
    """Creates client message ids (the UNIQ_KEY property) as Java's MessageClientIDSetter does.

    Layout: IP (4 or 16 bytes), int16 pid, int32 class-loader hash, int32 ms
    since the start of the month (local time), int16 counter; upper hex.
    """

    def __init__(self, ip: bytes, pid: int | None = None, instance_hash: int | None = None) -> None:
        if len(ip) not in (4, 16):
            raise CodecError(f"client IP must have 4 or 16 bytes, got {len(ip)}")
        pid = os.getpid() if pid is None else pid
        instance_hash = id(self) if instance_hash is None else instance_hash
        self.prefix = (bytes(ip) + _INT16.pack(_int16(pid)) + _INT32.pack(_int32(instance_hash))).hex().upper()
        self._counter = itertools.count()
        self._start_ms, self._next_start_ms = _month_start_ms(clock.now_ms())

    def next_id(self, now_ms: int | None = None) -> str:
        now = clock.now_ms() if now_ms is None else now_ms
        if now >= self._next_start_ms:
            self._start_ms, self._next_start_ms = _month_start_ms(now)
        diff = _int32(now - self._start_ms)
        if -1_000_000 < diff < 0:
            diff = 0
        counter = next(self._counter) & 0xFFFF
        return f"{self.prefix}{diff & 0xFFFFFFFF:08X}{counter:04X}"


def unique_id_ip(msg_id: str) -> str:
    """The producer IP inside a client message id (28 bytes mean IPv6)."""
    raw = _hex_bytes(msg_id)
    if len(raw) not in (16, 28):
        raise CodecError(f"client message id {msg_id!r} has {len(raw)} bytes, expected 16 or 28")
    return ipaddress.ip_address(raw[:16 if len(raw) == 28 else 4]).compressed


def unique_id_timestamp(msg_id: str, now_ms: int | None = None) -> int:
    """The approximate creation time (ms) of a client message id, as Java's getNearlyTimeFromID."""
    raw = _hex_bytes(msg_id)
    if len(raw) not in (16, 28):
        raise CodecError(f"client message id {msg_id!r} has {len(raw)} bytes, expected 16 or 28")
    ip_length = 16 if len(raw) == 28 else 4
    span: int = _UINT32.unpack_from(raw, ip_length + 6)[0]
    now = clock.now_ms() if now_ms is None else now_ms
    month_start, _ = _month_start_ms(now)
    if month_start + span >= now:
        previous = datetime.datetime.fromtimestamp((month_start - 1) / 1000)
        month_start, _ = _month_start_ms(int(previous.timestamp() * 1000))
    return month_start + span


# --- hashes --------------------------------------------------------------------------------------


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: over UTF-16 code units, signed 32-bit."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def crc32_masked(data: bytes) -> int:
    """CRC32 with the sign bit cleared, as Java's UtilAll.crc32 returns it."""
    return zlib.crc32(data) & 0x7FFFFFFF
