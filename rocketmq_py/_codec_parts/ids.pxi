# Included by _codec.pyx: Message ids and hashes.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- message ids -------------------------------------------------------------------------------


def create_offset_msg_id(host, port, offset) -> str:
    """The offset (store) message id: store IP, int32 port, int64 CommitLog offset, in upper hex."""
    ip, _ = _parse_host((host, port))
    return (ip + _INT32.pack(_i32(port)) + _INT64.pack(_i64(offset))).hex().upper()


def decode_offset_msg_id(msg_id) -> tuple:
    """``(ip, port, offset)`` of an offset message id; 32 hex digits mean IPv4, as in Java."""
    raw = _hex_bytes(msg_id)
    ip_length = 4 if len(msg_id) == 32 else 16
    if len(raw) != ip_length + 12:
        raise CodecError(f"offset message id {msg_id!r} has {len(raw)} bytes, expected {ip_length + 12}")
    ip = ipaddress.ip_address(raw[:ip_length])
    (port,) = _INT32.unpack_from(raw, ip_length)
    (offset,) = _INT64.unpack_from(raw, ip_length + 4)
    return ip.compressed, port, offset


def _hex_bytes(text):
    try:
        return bytes.fromhex(text)
    except (ValueError, TypeError):
        raise CodecError(f"message id {text!r} is not hexadecimal") from None


def _month_start_ms(now_ms):
    """Local-time start of the month holding ``now_ms`` and of the next one, in ms.

    Naive local datetimes, so each boundary gets its own UTC offset (a month
    that starts in winter time and is read in summer time), as Java's Calendar.
    """
    now = datetime.datetime.fromtimestamp(now_ms / 1000)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (start + datetime.timedelta(days=32)).replace(day=1)
    return int(start.timestamp() * 1000), int(following.timestamp() * 1000)


cdef class UniqueIdGenerator:
    """Creates client message ids (the UNIQ_KEY property) as Java's MessageClientIDSetter does.

    Layout: IP (4 or 16 bytes), int16 pid, int32 class-loader hash, int32 ms
    since the start of the month (local time), int16 counter; upper hex.
    """

    def __init__(self, ip, pid=None, instance_hash=None):
        if len(ip) not in (4, 16):
            raise CodecError(f"client IP must have 4 or 16 bytes, got {len(ip)}")
        pid = os.getpid() if pid is None else pid
        instance_hash = id(self) if instance_hash is None else instance_hash
        self.prefix = (bytes(ip) + _INT16.pack(_i16(pid)) + _INT32.pack(_i32(instance_hash))).hex().upper()
        self._counter = 0
        self._start_ms, self._next_start_ms = _month_start_ms(clock.now_ms())

    def next_id(self, now_ms=None) -> str:
        cdef char suffix[12]
        cdef uint16_t counter
        cdef uint32_t diff_bits
        cdef int32_t diff
        cdef int i
        now = clock.now_ms() if now_ms is None else now_ms
        if now >= self._next_start_ms:
            self._start_ms, self._next_start_ms = _month_start_ms(now)
        diff = _i32(now - self._start_ms)
        if -1_000_000 < diff < 0:
            diff = 0
        counter = <uint16_t>self._counter
        self._counter += 1
        diff_bits = <uint32_t>diff
        for i in range(8):
            suffix[i] = _HEX_UPPER[(diff_bits >> (28 - 4 * i)) & 0xF]
        for i in range(4):
            suffix[8 + i] = _HEX_UPPER[(counter >> (12 - 4 * i)) & 0xF]
        prefix = self.prefix
        if not PyUnicode_CheckExact(prefix):
            prefix = f"{prefix}"
        return prefix + PyUnicode_DecodeUTF8(suffix, 12, NULL)


def unique_id_ip(msg_id) -> str:
    """The producer IP inside a client message id (28 bytes mean IPv6)."""
    raw = _hex_bytes(msg_id)
    if len(raw) not in (16, 28):
        raise CodecError(f"client message id {msg_id!r} has {len(raw)} bytes, expected 16 or 28")
    return ipaddress.ip_address(raw[:16 if len(raw) == 28 else 4]).compressed


def unique_id_timestamp(msg_id, now_ms=None) -> int:
    """The approximate creation time (ms) of a client message id, as Java's getNearlyTimeFromID."""
    raw = _hex_bytes(msg_id)
    if len(raw) not in (16, 28):
        raise CodecError(f"client message id {msg_id!r} has {len(raw)} bytes, expected 16 or 28")
    cdef Py_ssize_t ip_length = 16 if len(raw) == 28 else 4
    span = load_u32(<const uint8_t*>PyBytes_AS_STRING(raw) + ip_length + 6)
    now = clock.now_ms() if now_ms is None else now_ms
    month_start, _ = _month_start_ms(now)
    if month_start + span >= now:
        month_start, _ = _month_start_ms(month_start - 1)
    return month_start + span


# --- hashes --------------------------------------------------------------------------------------


def java_string_hash(text) -> int:
    """Java's ``String.hashCode()``: over UTF-16 code units, signed 32-bit."""
    cdef uint32_t h = 0
    cdef Py_ssize_t i, length
    cdef uint32_t ch
    cdef int kind
    cdef const void* data
    if not PyUnicode_Check(text):
        encoded = text.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(encoded), 2):
            h = 31 * h + <uint32_t>((encoded[i] << 8) | encoded[i + 1])
        return <int32_t>h
    kind = PyUnicode_KIND(text)
    data = PyUnicode_DATA(text)
    length = PyUnicode_GET_LENGTH(text)
    for i in range(length):
        ch = PyUnicode_READ(kind, data, i)
        if ch < 0x10000:
            h = 31 * h + ch
        else:  # a surrogate pair in UTF-16
            h = 31 * h + (0xD800 + ((ch - 0x10000) >> 10))
            h = 31 * h + (0xDC00 + ((ch - 0x10000) & 0x3FF))
    return <int32_t>h


def crc32_masked(data) -> int:
    """CRC32 with the sign bit cleared, as Java's UtilAll.crc32 returns it."""
    return _zlib_crc32(data) & 0x7FFFFFFF
