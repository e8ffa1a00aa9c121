"""Just enough of the protobuf wire format to rewrite XSpace files without generated classes.

A message is a run of (tag, value) records; a tag is varint(field_number << 3 | wire_type).
Only the wire types XSpace uses are needed: 0 (varint), 1 (fixed64), 2 (length-delimited)
and 5 (fixed32).
"""

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5


def read_varint(buf, pos):
    """Returns (value, position after the varint)."""
    result = 0
    shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError(f"varint longer than 10 bytes at byte {pos}")


def encode_varint(value):
    """Encodes a non-negative int, or a negative int64 as its 10-byte two's complement."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def to_int64(value):
    """Reinterprets a decoded uint64 varint as int64 (proto int64 fields)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def iter_fields(buf, start=0, end=None):
    """Yields (field_number, wire_type, value, record_start, record_end) for each record.

    value is an int for varints and fixed types, and a (value_start, value_end) pair into
    `buf` for length-delimited fields, so callers can copy records without decoding them.
    """
    pos = start
    end = len(buf) if end is None else end
    while pos < end:
        record_start = pos
        tag, pos = read_varint(buf, pos)
        field, wire_type = tag >> 3, tag & 7
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire_type == FIXED64:
            value = int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wire_type == FIXED32:
            value = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        elif wire_type == LENGTH_DELIMITED:
            length, pos = read_varint(buf, pos)
            value = (pos, pos + length)
            pos += length
        else:
            raise ValueError(f"unsupported wire type {wire_type} at byte {record_start}")
        if pos > end:
            raise ValueError(f"record at byte {record_start} runs past its message end {end}")
        yield field, wire_type, value, record_start, pos


def encode_tag(field, wire_type):
    return encode_varint(field << 3 | wire_type)


def encode_length_delimited(field, payload_len):
    """The tag and length prefix of a length-delimited record (payload written separately)."""
    return encode_tag(field, LENGTH_DELIMITED) + encode_varint(payload_len)
