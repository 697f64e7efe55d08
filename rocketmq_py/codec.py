"""The one place that chooses the codec implementation.

The compiled ``_codec`` extension is used when it was built; the pure-Python
twin ``_codec_py`` is used when ``ROCKETMQ_PY_NO_EXTENSIONS=1`` or when the
extension is missing. Everything else imports the codec from here.
``ROCKETMQ_PY_REQUIRE_EXTENSIONS=1`` turns a missing extension into an error
(the test suite sets it, so a broken build cannot pass as the twin).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._extensions import load

if TYPE_CHECKING:
    from rocketmq_py import _codec_py as _impl
else:
    _impl = load("rocketmq_py._codec", "rocketmq_py._codec_py")

from rocketmq_py._codec_types import (  # noqa: E402
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    LANGUAGE_CODES,
    LANGUAGE_JAVA,
    LANGUAGE_NAMES,
    LANGUAGE_PYTHON,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    VERSION_4_9_8,
    JsonObjectKey,
    RemotingCommand,
)

from rocketmq_py.common.magic_codes import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE  # noqa: E402

IMPLEMENTATION: str = _impl.IMPLEMENTATION
MAX_FRAME_LENGTH = _impl.MAX_FRAME_LENGTH
COMPRESSION_LZ4 = _impl.COMPRESSION_LZ4
COMPRESSION_ZSTD = _impl.COMPRESSION_ZSTD
COMPRESSION_ZLIB = _impl.COMPRESSION_ZLIB

FrameDecoder = _impl.FrameDecoder
UniqueIdGenerator = _impl.UniqueIdGenerator
new_command = _impl.new_command
encode_command = _impl.encode_command
decode_frame = _impl.decode_frame
encode_json_header = _impl.encode_json_header
decode_json_header = _impl.decode_json_header
encode_rocketmq_header = _impl.encode_rocketmq_header
decode_rocketmq_header = _impl.decode_rocketmq_header
header_to_fields = _impl.header_to_fields
header_from_fields = _impl.header_from_fields
header_fields = _impl.header_fields
read_header = _impl.read_header
read_command_header = _impl.read_command_header
properties_to_string = _impl.properties_to_string
string_to_properties = _impl.string_to_properties
encode_batch = _impl.encode_batch
decode_batch = _impl.decode_batch
compression_type = _impl.compression_type
compress = _impl.compress
decompress = _impl.decompress
decode_store_records = _impl.decode_store_records
encode_store_record = _impl.encode_store_record
create_offset_msg_id = _impl.create_offset_msg_id
decode_offset_msg_id = _impl.decode_offset_msg_id
unique_id_ip = _impl.unique_id_ip
unique_id_timestamp = _impl.unique_id_timestamp
java_string_hash = _impl.java_string_hash
crc32_masked = _impl.crc32_masked
json_loads = _impl.json_loads
json_dumps = _impl.json_dumps

__all__ = [
    "IMPLEMENTATION", "MAX_FRAME_LENGTH", "MESSAGE_MAGIC_CODE", "BLANK_MAGIC_CODE",
    "COMPRESSION_LZ4", "COMPRESSION_ZSTD", "COMPRESSION_ZLIB",
    "FLAG_ONEWAY", "FLAG_RESPONSE", "LANGUAGE_CODES", "LANGUAGE_JAVA", "LANGUAGE_NAMES",
    "LANGUAGE_PYTHON", "SERIALIZE_JSON", "SERIALIZE_ROCKETMQ", "VERSION_4_9_8",
    "JsonObjectKey", "RemotingCommand", "FrameDecoder", "UniqueIdGenerator",
    "new_command", "encode_command", "decode_frame", "encode_json_header", "decode_json_header",
    "encode_rocketmq_header", "decode_rocketmq_header", "header_to_fields", "header_from_fields",
    "header_fields", "read_header", "read_command_header",
    "properties_to_string",
    "string_to_properties", "encode_batch", "decode_batch", "compression_type", "compress",
    "decompress", "decode_store_records", "encode_store_record", "create_offset_msg_id",
    "decode_offset_msg_id", "unique_id_ip", "unique_id_timestamp", "java_string_hash",
    "crc32_masked", "json_loads", "json_dumps",
]


# Built on the selected encode_command, so one definition serves both implementations (and it is not one of
# the names each of them must offer).
def encode_command_apart(cmd: RemotingCommand) -> tuple[bytes, bytes | None]:
    """``encode_command(cmd)`` as the frame's head and its body, which is not copied: ``head + body`` is the
    frame (the head's length field counts the body), and the same errors are raised.

    A connection writes both as they are, so a large body (a pull's records) reaches the kernel without
    first being copied into a frame.
    """
    body = cmd.body
    if not body:
        return encode_command(cmd), None
    cmd.body = None
    try:
        head = encode_command(cmd)
    finally:
        cmd.body = body
    total = int.from_bytes(head[:4], "big") + memoryview(body).nbytes
    if total + 4 > MAX_FRAME_LENGTH:
        return encode_command(cmd), None  # raises the codec's own FrameTooLargeError
    return total.to_bytes(4, "big") + head[4:], body
