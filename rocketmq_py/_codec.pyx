# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The byte-level codec of RocketMQ 4.9, compiled.

The compiled twin of ``_codec_py``: the same functions with the same results
and the same exceptions. ``_codec_py`` stays the readable specification and
the oracle of the differential tests; this module makes the hot paths run at
C speed: frame cutting, both header serializations, properties, batch bodies,
store records and hashes. Reads go through the bounds-checked ``ByteReader``
of ``_codec.pxd`` (the module is compiled without Cython's own bounds checks);
encoders write into a ``Writer`` that grows on the heap only when needed.
Rare and cold paths (compression, message ids, the lenient JSON fallback)
call into Python as the twin does.
"""
import builtins
import datetime
import ipaddress
import json
import os
import struct
import types
import zlib

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.bytearray cimport PyByteArray_GET_SIZE
from cpython.dict cimport PyDict_Copy, PyDict_Next, PyDict_SetItem
from cpython.long cimport PyLong_Check, PyLong_CheckExact
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_Check, PyUnicode_CheckExact
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy, memset

from rocketmq_py._codec_types import (
    HEADER_BOOL,
    HEADER_FLOAT,
    HEADER_INT,
    HEADER_PLANS,
    HEADER_STR,
    LANGUAGE_CODES,
    LANGUAGE_NAMES,
    LANGUAGE_OTHER,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    WIRE_NAMES,
    JsonObjectKey,
    RemotingCommand,
)
from rocketmq_py.common import clock, magic_codes, sysflag
from rocketmq_py.common.message import MessageExt
from rocketmq_py.errors import CodecError, FrameTooLargeError

cdef extern from "Python.h":
    Py_ssize_t PyDict_GET_SIZE(object mapping)
    enum:
        PyUnicode_1BYTE_KIND
        PyUnicode_4BYTE_KIND
    bint PyUnicode_IS_ASCII(object text)
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) nogil
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value) nogil
    Py_UCS4 PyUnicode_MAX_CHAR_VALUE(object text)
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    object PyUnicode_Substring(object text, Py_ssize_t start, Py_ssize_t end)
    object PyUnicode_DecodeUTF8(const char* data, Py_ssize_t size, const char* errors)
    object PyUnicode_AsEncodedString(object text, const char* encoding, const char* errors)
    Py_ssize_t PyUnicode_CopyCharacters(object to, Py_ssize_t to_start, object source,
                                        Py_ssize_t from_start, Py_ssize_t how_many) except -1
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch)
    bint Py_UNICODE_ISALPHA(Py_UCS4 ch)
    long long PyLong_AsLongLongAndOverflow(object value, int* overflow) except? -1

# Building RemotingCommand, MessageExt and header objects is on every decode
# path: create the instance with tp_new and store straight into its __slots__
# (each slot is a PyMemberDef at a fixed offset), which skips the Python-level
# __init__ and the attribute machinery. _bind_slots (and _laid_out for headers)
# checks that this is exactly what __init__ would produce; otherwise the
# constructor (or setattr) is used.
cdef extern from *:
    """
    #include <structmember.h>
    static PyObject *rmq_new_instance(PyObject *type, PyObject *no_args) {
        PyTypeObject *t = (PyTypeObject *)type;
        return t->tp_new(t, no_args, NULL);
    }
    static Py_ssize_t rmq_slot_offset(PyObject *descriptor) {
        PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
            return -1;
        }
        return member->offset;
    }
    static PyObject *rmq_read_slot(PyObject *obj, Py_ssize_t offset) {
        return *(PyObject **)((char *)obj + offset);
    }
    /* A dict sized for `count` entries, so that filling it never resizes. */
    static PyObject *rmq_new_dict(Py_ssize_t count) {
    #if PY_VERSION_HEX < 0x030D0000
        return _PyDict_NewPresized(count);
    #else
        (void)count;
        return PyDict_New();
    #endif
    }
    static void rmq_fill_slot(PyObject *obj, Py_ssize_t offset, PyObject *value) {
        PyObject **slot = (PyObject **)((char *)obj + offset);
        PyObject *old = *slot;
        Py_INCREF(value);
        *slot = value;
        Py_XDECREF(old);
    }
    """
    object rmq_new_instance(object cls, object no_args)
    Py_ssize_t rmq_slot_offset(object descriptor)
    PyObject* rmq_read_slot(object obj, Py_ssize_t offset)
    dict rmq_new_dict(Py_ssize_t count)
    void rmq_fill_slot(object obj, Py_ssize_t offset, object value)

IMPLEMENTATION = "cython"

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

#: Nesting deeper than this is refused instead of exhausting the stack.
MAX_JSON_DEPTH = 256

# C copies of the shared constants, read from their homes (common/sysflag.py, common/magic_codes.py).
cdef int32_t _FLAG_COMPRESSED = sysflag.COMPRESSED_FLAG
cdef int32_t _FLAG_BORNHOST_V6 = sysflag.BORNHOST_V6_FLAG
cdef int32_t _FLAG_STOREHOST_V6 = sysflag.STOREHOSTADDRESS_V6_FLAG
cdef int32_t _COMPRESSION_TYPE_MASK = sysflag.COMPRESSION_TYPE_MASK
cdef int32_t _COMPRESSION_TYPE_SHIFT = sysflag.COMPRESSION_TYPE_SHIFT
cdef uint32_t _MESSAGE_MAGIC = <uint32_t><int32_t>magic_codes.MESSAGE_MAGIC_CODE

cdef enum:  # C constants of the module's own, for the hot paths
    _TYPE_JSON = 0
    _TYPE_ROCKETMQ = 1
    _FRAME_LIMIT = 16 * 1024 * 1024
    _STORE_HEAD_SIZE = 48
    _BINARY_HEADER_FIXED = 21
    # The JSON header fast path hands anything unusual to json.loads; real
    # headers nest two levels (the command and its extFields).
    _FAST_JSON_MAX_DEPTH = 16

cdef tuple _NO_ARGS = ()
cdef object _INT16 = struct.Struct(">h")
cdef object _INT32 = struct.Struct(">i")
cdef object _INT64 = struct.Struct(">q")
cdef object _SIGNED_BYTE = struct.Struct(">b")
cdef object _zlib_crc32 = zlib.crc32
cdef object _json_std_loads = json.loads
cdef object _json_scanstring = json.decoder.scanstring
cdef object _json_quote = json.encoder.encode_basestring
# Called as Python functions on purpose: Cython would inline its own parsers.
cdef object _py_int = builtins.int
cdef object _py_float = builtins.float
cdef const char* _HEX_UPPER = "0123456789ABCDEF"
cdef const char* _HEX_LOWER = "0123456789abcdef"

# The sections mirror _codec_py, one include file each.
include "_codec_parts/core.pxi"
include "_codec_parts/frames.pxi"
include "_codec_parts/json_header.pxi"
include "_codec_parts/rocketmq_header.pxi"
include "_codec_parts/header_mapping.pxi"
include "_codec_parts/bodies.pxi"
include "_codec_parts/store_records.pxi"
include "_codec_parts/ids.pxi"
include "_codec_parts/fastjson.pxi"
