# Included by _codec.pyx: Store records: the pull, view and query bodies.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- store records (pull, view and query bodies) -----------------------------------------


# Records of one pull body mostly share their born and store hosts: the last
# IPv4 text of each is kept with its address and port.
cdef uint64_t _last_host_key[2]
cdef PyObject* _last_host_text[2]


cdef object _host_text(const uint8_t* ip, Py_ssize_t ip_length, int32_t port, int which):
    """``a.b.c.d:port`` or ``[v6]:port``, as the twin's ``_host_text``."""
    cdef uint64_t key
    if ip_length != 4:
        return f"[{ipaddress.IPv6Address(PyBytes_FromStringAndSize(<const char*>ip, 16)).compressed}]:{port}"
    key = (<uint64_t>load_u32(ip) << 32) | <uint32_t>port
    if _last_host_text[which] != NULL and _last_host_key[which] == key:
        return <object>_last_host_text[which]
    host = _format_ipv4_host(ip, port)
    Py_INCREF(host)
    Py_XDECREF(_last_host_text[which])
    _last_host_text[which] = <PyObject*>host
    _last_host_key[which] = key
    return host


cdef object _format_ipv4_host(const uint8_t* ip, int32_t port):
    cdef char text[32]
    cdef char digits[12]
    cdef Py_ssize_t n = 0
    cdef int i, octet, d
    cdef uint32_t rest
    for i in range(4):
        octet = ip[i]
        if octet >= 100:
            text[n] = <char>(48 + octet // 100)
            n += 1
        if octet >= 10:
            text[n] = <char>(48 + (octet // 10) % 10)
            n += 1
        text[n] = <char>(48 + octet % 10)
        n += 1
        text[n] = b'.' if i < 3 else b':'
        n += 1
    if port < 0:
        text[n] = b'-'
        n += 1
        rest = <uint32_t>0 - <uint32_t>port
    else:
        rest = <uint32_t>port
    d = 0
    while True:
        digits[d] = <char>(48 + rest % 10)
        d += 1
        rest //= 10
        if rest == 0:
            break
    while d > 0:
        d -= 1
        text[n] = digits[d]
        n += 1
    return PyUnicode_DecodeUTF8(text, n, NULL)


cdef object _hex_upper(const uint8_t* data, Py_ssize_t length):
    cdef char text[64]
    cdef Py_ssize_t i
    for i in range(length):
        text[2 * i] = _HEX_UPPER[data[i] >> 4]
        text[2 * i + 1] = _HEX_UPPER[data[i] & 0xF]
    return PyUnicode_DecodeUTF8(text, 2 * length, NULL)


def decode_store_records(data, bint decompress_body=True, bint strict=True) -> list:
    """Decode CommitLog records laid end to end, as a pull body carries them.

    With ``strict`` a malformed record raises :class:`CodecError`; without it
    decoding stops at the first bad record and returns what came before, as
    Java's ``MessageDecoder.decodes`` does.
    """
    cdef ByteReader r
    cdef list messages = []
    cdef PropertyMemo memo
    data = _bytes_of(data)
    reader_init(&r, <const uint8_t*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    _memo_init(&memo)
    try:
        while reader_left(&r) > 0:
            try:
                message = _decode_store_record(&r, decompress_body, &memo)
            except CodecError:
                if strict:
                    raise
                break
            messages.append(message)
    finally:
        _memo_clear(&memo)
    return messages


cdef object _decode_store_record(ByteReader* r, bint decompress_body, PropertyMemo* memo):
    cdef const uint8_t* p
    cdef const uint8_t* born_ip
    cdef const uint8_t* store_ip
    cdef Py_ssize_t born_ip_length, store_ip_length
    cdef int32_t store_size, body_crc, queue_id, flag, sys_flag, born_port, store_port
    cdef int32_t reconsume_times, body_length
    cdef int64_t queue_offset, physical_offset, born_timestamp, store_timestamp, prepared_offset
    cdef int topic_length
    cdef int16_t props_length
    cdef uint8_t id_bytes[28]

    p = reader_take(r, _STORE_HEAD_SIZE)
    if p == NULL:
        raise CodecError(f"store record ends inside its fixed head at byte {r.position}")
    store_size = load_i32(p)
    body_crc = load_i32(p + 8)
    queue_id = load_i32(p + 12)
    flag = load_i32(p + 16)
    queue_offset = load_i64(p + 20)
    physical_offset = load_i64(p + 28)
    sys_flag = load_i32(p + 36)
    born_timestamp = load_i64(p + 40)
    born_ip_length = 16 if sys_flag & _FLAG_BORNHOST_V6 else 4
    p = reader_take(r, born_ip_length + 4 + 8)
    if p == NULL:
        raise CodecError(f"store record ends inside the born host at byte {r.position}")
    born_ip = p
    born_port = load_i32(p + born_ip_length)
    store_timestamp = load_i64(p + born_ip_length + 4)
    store_ip_length = 16 if sys_flag & _FLAG_STOREHOST_V6 else 4
    p = reader_take(r, store_ip_length + 4 + 4 + 8 + 4)
    if p == NULL:
        raise CodecError(f"store record ends inside the store host at byte {r.position}")
    store_ip = p
    store_port = load_i32(p + store_ip_length)
    reconsume_times = load_i32(p + store_ip_length + 4)
    prepared_offset = load_i64(p + store_ip_length + 8)
    body_length = load_i32(p + store_ip_length + 16)
    body = b""
    if body_length > 0:
        p = reader_take(r, body_length)
        if p == NULL:
            raise CodecError(f"store record ends inside the body at byte {r.position}")
        body = PyBytes_FromStringAndSize(<const char*>p, body_length)
        if decompress_body and sys_flag & _FLAG_COMPRESSED:
            body = decompress(body, compression_type(sys_flag))
    p = reader_take(r, 1)
    if p == NULL:
        raise CodecError(f"store record ends inside the topic length at byte {r.position}")
    topic_length = p[0]
    if topic_length > 127:
        raise CodecError(f"negative topic length {topic_length - 256} at byte {r.position - 1}")
    p = reader_take(r, topic_length + 2)
    if p == NULL:
        raise CodecError(f"store record ends inside the topic at byte {r.position}")
    topic = _decode_text(p, topic_length)
    props_length = load_i16(p + topic_length)
    if props_length > 0:
        p = reader_take(r, props_length)
        if p == NULL:
            raise CodecError(f"store record ends inside the properties at byte {r.position}")
        properties = _properties_from_utf8(p, props_length, memo)
    else:
        properties = {}

    # The offset message id: store IP, int32 port, int64 CommitLog offset.
    memcpy(id_bytes, store_ip, store_ip_length)
    store_u32(id_bytes + store_ip_length, <uint32_t>store_port)
    store_u64(id_bytes + store_ip_length + 4, <uint64_t>physical_offset)
    offset_msg_id = _hex_upper(id_bytes, store_ip_length + 12)
    born_host = _host_text(born_ip, born_ip_length, born_port, 0)
    store_host = _host_text(store_ip, store_ip_length, store_port, 1)

    if not _message_fast:
        message = MessageExt(topic, body)
        for name, value in zip(_MESSAGE_FIELDS[2:], (
            flag, properties, message.transaction_id, queue_id, store_size, queue_offset, sys_flag,
            born_timestamp, born_host, store_timestamp, store_host, offset_msg_id, physical_offset,
            body_crc, reconsume_times, prepared_offset, message.broker_name,
        )):
            setattr(message, name, value)
        return message
    message = rmq_new_instance(MessageExt, _NO_ARGS)
    rmq_fill_slot(message, _message_slots[MX_TOPIC], topic)
    rmq_fill_slot(message, _message_slots[MX_BODY], body)
    rmq_fill_slot(message, _message_slots[MX_FLAG], flag)
    rmq_fill_slot(message, _message_slots[MX_PROPERTIES], properties)
    rmq_fill_slot(message, _message_slots[MX_TRANSACTION_ID], _default_transaction_id)
    rmq_fill_slot(message, _message_slots[MX_QUEUE_ID], queue_id)
    rmq_fill_slot(message, _message_slots[MX_STORE_SIZE], store_size)
    rmq_fill_slot(message, _message_slots[MX_QUEUE_OFFSET], queue_offset)
    rmq_fill_slot(message, _message_slots[MX_SYS_FLAG], sys_flag)
    rmq_fill_slot(message, _message_slots[MX_BORN_TIMESTAMP], born_timestamp)
    rmq_fill_slot(message, _message_slots[MX_BORN_HOST], born_host)
    rmq_fill_slot(message, _message_slots[MX_STORE_TIMESTAMP], store_timestamp)
    rmq_fill_slot(message, _message_slots[MX_STORE_HOST], store_host)
    rmq_fill_slot(message, _message_slots[MX_OFFSET_MSG_ID], offset_msg_id)
    rmq_fill_slot(message, _message_slots[MX_COMMIT_LOG_OFFSET], physical_offset)
    rmq_fill_slot(message, _message_slots[MX_BODY_CRC], body_crc)
    rmq_fill_slot(message, _message_slots[MX_RECONSUME_TIMES], reconsume_times)
    rmq_fill_slot(message, _message_slots[MX_PREPARED_OFFSET], prepared_offset)
    rmq_fill_slot(message, _message_slots[MX_BROKER_NAME], _default_broker_name)
    return message


def _parse_host(host):
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
    topic,
    body,
    properties=None,
    queue_id=0,
    flag=0,
    queue_offset=0,
    physical_offset=0,
    sys_flag=0,
    born_timestamp=0,
    born_host="127.0.0.1:0",
    store_timestamp=0,
    store_host="127.0.0.1:0",
    reconsume_times=0,
    prepared_transaction_offset=0,
    body_crc=None,
) -> bytes:
    """One CommitLog record in the store layout (magic V1).

    The host-family bits of ``sys_flag`` follow the addresses given, and the
    body CRC is computed (masked as Java masks it) unless ``body_crc`` is given.
    """
    cdef Writer w
    cdef Py_ssize_t size
    body = _bytes_of(body)
    born_ip, born_port = _parse_host(born_host)
    store_ip, store_port = _parse_host(store_host)
    sys_flag &= ~(_FLAG_BORNHOST_V6 | _FLAG_STOREHOST_V6)
    if len(born_ip) == 16:
        sys_flag |= _FLAG_BORNHOST_V6
    if len(store_ip) == 16:
        sys_flag |= _FLAG_STOREHOST_V6
    topic_bytes = topic.encode("utf-8", "surrogatepass")
    if len(topic_bytes) > 127:
        raise CodecError(f"topic of {len(topic_bytes)} bytes exceeds the 127 byte limit")
    props = _properties_bytes(properties)
    size = (4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + len(born_ip) + 4 + 8 + len(store_ip) + 4 + 4 + 8
            + 4 + len(body) + 1 + len(topic_bytes) + 2 + len(props))
    crc = crc32_masked(body) if body_crc is None else body_crc
    _w_init(&w)
    try:
        _w_u32(&w, <uint32_t>size)
        _w_u32(&w, _MESSAGE_MAGIC)
        _w_u32(&w, <uint32_t>_i32(crc))
        _w_u32(&w, <uint32_t>_i32(queue_id))
        _w_u32(&w, <uint32_t>_i32(flag))
        _w_u64(&w, <uint64_t>_i64(queue_offset))
        _w_u64(&w, <uint64_t>_i64(physical_offset))
        _w_u32(&w, <uint32_t>_i32(sys_flag))
        _w_u64(&w, <uint64_t>_i64(born_timestamp))
        _w_put(&w, PyBytes_AS_STRING(born_ip), len(born_ip))
        _w_u32(&w, <uint32_t>_i32(born_port))
        _w_u64(&w, <uint64_t>_i64(store_timestamp))
        _w_put(&w, PyBytes_AS_STRING(store_ip), len(store_ip))
        _w_u32(&w, <uint32_t>_i32(store_port))
        _w_u32(&w, <uint32_t>_i32(reconsume_times))
        _w_u64(&w, <uint64_t>_i64(prepared_transaction_offset))
        _w_u32(&w, <uint32_t>len(body))
        _w_put(&w, PyBytes_AS_STRING(body), len(body))
        _w_byte(&w, <uint8_t>len(topic_bytes))
        _w_put(&w, PyBytes_AS_STRING(topic_bytes), len(topic_bytes))
        _w_u16(&w, <uint16_t>len(props))
        _w_put(&w, PyBytes_AS_STRING(props), len(props))
        return _w_bytes(&w)
    finally:
        _w_free(&w)
