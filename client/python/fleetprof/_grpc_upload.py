"""Upload over gRPC, written with the standard library only.

The HTTP listener has no upload route: uploads are `fleetprof.v1.IngestService/Upload`, a
client-streaming gRPC method (docs/api.md). This module speaks just enough HTTP/2 (RFC 9113:
prior knowledge on plain TCP, ALPN "h2" over TLS) and HPACK (RFC 7541) to send one
UploadRequest stream -- the metadata, then the file in 1 MiB chunks -- and read the
UploadResponse and the gRPC status, the same messages `fleetprof upload` sends.
"""

import os
import socket
import struct
import urllib.parse

from . import errors
from ._hpack_tables import HUFFMAN_CODES, STATIC_TABLE

CHUNK_BYTES = 1 << 20
PATH = "/fleetprof.v1.IngestService/Upload"

# Frame types and flags (RFC 9113 section 6).
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE = 0x4, 0x5
STREAM = 1


# ---- protobuf wire format (the fields of proto/fleetprof/v1/ingest.proto) ----

def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field_bytes(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _field_string(number, text):
    return _field_bytes(number, text.encode()) if text else b""


def _field_int(number, value):
    return _varint(number << 3) + _varint(value) if value else b""


def upload_metadata(upload_id, job, node, fmt, labels, file_name, total_bytes):
    """UploadRequest{metadata: UploadMetadata{…}} as bytes."""
    meta = (_field_string(1, upload_id) + _field_string(2, job) + _field_string(3, node) +
            _field_string(4, fmt))
    for key, value in labels.items():  # map<string,string> labels = 5: entries {key=1, value=2}
        meta += _field_bytes(5, _field_string(1, key) + _field_string(2, value))
    meta += _field_string(6, file_name) + _field_int(8, total_bytes)
    return _field_bytes(1, meta)


def upload_chunk(data):
    return _field_bytes(2, data)  # UploadRequest{chunk}


def parse_upload_response(data):
    """UploadResponse bytes -> {"profile_id", "already_existed"} (other fields skipped)."""
    out = {"profile_id": "", "already_existed": False}
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            if number == 2:
                out["already_existed"] = bool(value)
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            if number == 1:
                out["profile_id"] = data[pos:pos + size].decode()
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise errors.Error("upload: malformed UploadResponse")
    return out


def _read_varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


# ---- HPACK ----

def _encode_header(name, value):
    """A literal header field without indexing, new name, no Huffman (RFC 7541 6.2.2)."""
    name, value = name.encode(), value.encode()
    return b"\x00" + _hpack_int(len(name), 7) + name + _hpack_int(len(value), 7) + value


def _hpack_int(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


_HUFFMAN = {(length, code): symbol for symbol, (code, length) in enumerate(HUFFMAN_CODES)}


def _huffman_decode(data):
    out = bytearray()
    code, length = 0, 0
    for byte in data:
        for shift in range(7, -1, -1):
            code = code << 1 | (byte >> shift) & 1
            length += 1
            symbol = _HUFFMAN.get((length, code))
            if symbol is not None:
                if symbol == 256:
                    raise errors.Error("upload: EOS in a Huffman-coded header")
                out.append(symbol)
                code, length = 0, 0
    return bytes(out)  # the rest (< 8 one bits) is padding


class HpackDecoder:
    def __init__(self):
        self.dynamic = []  # newest first
        self.max_size = 4096

    def _int(self, data, pos, prefix_bits):
        limit = (1 << prefix_bits) - 1
        value = data[pos] & limit
        pos += 1
        if value < limit:
            return value, pos
        shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value += (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value, pos

    def _string(self, data, pos):
        huffman = data[pos] & 0x80
        size, pos = self._int(data, pos, 7)
        raw = data[pos:pos + size]
        return (_huffman_decode(raw) if huffman else bytes(raw)).decode("latin-1"), pos + size

    def _entry(self, index):
        if index == 0:
            raise errors.Error("upload: HPACK index 0")
        if index <= len(STATIC_TABLE):
            return STATIC_TABLE[index - 1]
        return self.dynamic[index - len(STATIC_TABLE) - 1]

    def _add(self, name, value):
        self.dynamic.insert(0, (name, value))
        self._evict()

    def _evict(self):
        while self.dynamic and sum(len(n) + len(v) + 32 for n, v in self.dynamic) > self.max_size:
            self.dynamic.pop()

    def decode(self, data):
        headers = []
        pos = 0
        while pos < len(data):
            byte = data[pos]
            if byte & 0x80:  # indexed
                index, pos = self._int(data, pos, 7)
                headers.append(self._entry(index))
            elif byte & 0xC0 == 0x40:  # literal with incremental indexing
                index, pos = self._int(data, pos, 6)
                name, pos = (self._entry(index)[0], pos) if index else self._string(data, pos)
                value, pos = self._string(data, pos)
                self._add(name, value)
                headers.append((name, value))
            elif byte & 0xE0 == 0x20:  # dynamic table size update
                self.max_size, pos = self._int(data, pos, 5)
                self._evict()
            else:  # literal without indexing / never indexed
                index, pos = self._int(data, pos, 4)
                name, pos = (self._entry(index)[0], pos) if index else self._string(data, pos)
                value, pos = self._string(data, pos)
                headers.append((name, value))
        return headers


# ---- HTTP/2 ----

def _frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


class _Connection:
    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.hpack = HpackDecoder()
        self.send_window = 65535  # the connection's
        self.stream_window = 65535
        self.initial_window = 65535
        self.max_frame = 16384
        self.headers = []  # every header block of the stream, decoded
        self.data = b""
        self.closed = False
        self.reset = None

    def _recv_exact(self, size):
        while len(self.buffer) < size:
            more = self.sock.recv(65536)
            if not more:
                raise errors.Unavailable("upload: the server closed the connection")
            self.buffer += more
        out, self.buffer = self.buffer[:size], self.buffer[size:]
        return out

    def read_frame(self):
        """Reads one frame and acts on it (settings, pings, windows, our stream's answer)."""
        head = self._recv_exact(9)
        length = int.from_bytes(head[:3], "big")
        kind, flags = head[3], head[4]
        stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        payload = self._recv_exact(length)
        if kind == SETTINGS and not flags & ACK:
            for i in range(0, len(payload) - 5, 6):
                ident, value = struct.unpack(">HI", payload[i:i + 6])
                if ident == SETTINGS_INITIAL_WINDOW_SIZE:
                    self.stream_window += value - self.initial_window
                    self.initial_window = value
                elif ident == SETTINGS_MAX_FRAME_SIZE:
                    self.max_frame = value
            self.sock.sendall(_frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            self.sock.sendall(_frame(PING, ACK, 0, payload))
        elif kind == WINDOW_UPDATE:
            increment = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
            if stream == 0:
                self.send_window += increment
            elif stream == STREAM:
                self.stream_window += increment
        elif kind == GOAWAY:
            code = int.from_bytes(payload[4:8], "big")
            if stream == 0 and not self.closed and code != 0:
                raise errors.Unavailable("upload: the server ended the connection (HTTP/2 error %d: %s)"
                                         % (code, payload[8:].decode("utf-8", "replace")))
        elif stream == STREAM and kind in (HEADERS, CONTINUATION):
            block = payload
            if kind == HEADERS:
                if flags & PADDED:
                    block = block[1:len(block) - payload[0]]
                if flags & PRIORITY:
                    block = block[5:]
            while not flags & END_HEADERS:  # CONTINUATION frames carry the rest of the block
                more_head = self._recv_exact(9)
                flags = more_head[4]
                block += self._recv_exact(int.from_bytes(more_head[:3], "big"))
            self.headers.extend(self.hpack.decode(block))
            if head[4] & END_STREAM:
                self.closed = True
        elif stream == STREAM and kind == DATA:
            body = payload[1:len(payload) - payload[0]] if flags & PADDED else payload
            self.data += body
            if length:  # give the window back so a long answer never stalls
                self.sock.sendall(_frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", length)) +
                                  _frame(WINDOW_UPDATE, 0, STREAM, struct.pack(">I", length)))
            if flags & END_STREAM:
                self.closed = True
        elif stream == STREAM and kind == RST_STREAM:
            self.reset = int.from_bytes(payload[:4], "big")
            self.closed = True

    def send_data(self, data, end_stream=False):
        view = memoryview(data)
        while True:
            while min(self.send_window, self.stream_window) <= 0 and not self.closed:
                self.read_frame()
            if self.closed:  # the server answered early (an error): stop sending
                return
            size = min(len(view), self.send_window, self.stream_window, self.max_frame)
            last = size == len(view)
            self.sock.sendall(_frame(DATA, END_STREAM if last and end_stream else 0, STREAM,
                                     bytes(view[:size])))
            self.send_window -= size
            self.stream_window -= size
            view = view[size:]
            if last:
                return


def upload(grpc_url, ssl_context, token, path, job, labels, node, fmt, upload_id, timeout):
    """Sends the file at `path` as one Upload stream to `grpc_url` ("http://host:port" or
    "https://…"); returns the UploadResponse as a dict. Raises errors.Error subclasses."""
    parts = urllib.parse.urlsplit(grpc_url)
    host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        raise errors.Unavailable("upload: cannot reach the gRPC listener %s:%s: %s" % (host, port, e))
    try:
        if parts.scheme == "https":
            context = ssl_context
            context.set_alpn_protocols(["h2"])
            try:
                sock = context.wrap_socket(sock, server_hostname=host)
            except OSError as e:
                raise errors.Unavailable("upload: TLS with %s:%s failed (check that `ca` signed the "
                                         "server's certificate): %s" % (host, port, e))
        conn = _Connection(sock)
        authority = "%s:%s" % (host if ":" not in host else "[%s]" % host, port)
        headers = [(":method", "POST"), (":scheme", parts.scheme), (":path", PATH),
                   (":authority", authority), ("content-type", "application/grpc"), ("te", "trailers"),
                   ("user-agent", "fleetprof-python")]
        if token:
            headers.append(("authorization", "Bearer " + token))
        if timeout:
            headers.append(("grpc-timeout", "%dm" % int(timeout * 1000)))
        block = b"".join(_encode_header(n, v) for n, v in headers)
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" +
                     _frame(SETTINGS, 0, 0, struct.pack(">HI", 0x2, 0)) +  # no server push
                     _frame(HEADERS, END_HEADERS, STREAM, block))
        size = os.path.getsize(path)
        message = upload_metadata(upload_id, job, node, fmt or "", labels,
                                  os.path.basename(path), size)
        conn.send_data(b"\x00" + struct.pack(">I", len(message)) + message)
        with open(path, "rb") as f:
            while not conn.closed:
                data = f.read(CHUNK_BYTES)
                if not data:
                    break
                message = upload_chunk(data)
                conn.send_data(b"\x00" + struct.pack(">I", len(message)) + message)
        if not conn.closed:
            conn.send_data(b"", end_stream=True)
        while not conn.closed:
            conn.read_frame()
    except socket.timeout:
        raise errors.Unavailable("upload: no answer from %s:%s within %s s" % (host, port, timeout))
    finally:
        sock.close()
    fields = dict(conn.headers)
    if conn.reset is not None and "grpc-status" not in fields:
        raise errors.Unavailable("upload: the server reset the stream (HTTP/2 error %d)" % conn.reset)
    status = fields.get(":status", "")
    if status and status != "200":
        raise errors.from_http(int(status), "", "upload: HTTP status %s from the gRPC listener" % status)
    grpc_status = int(fields.get("grpc-status", "2"))
    if grpc_status != 0:
        message = urllib.parse.unquote(fields.get("grpc-message", "")) or "upload failed"
        raise errors.from_grpc(grpc_status, message)
    if len(conn.data) < 5:
        raise errors.Error("upload: the server sent no UploadResponse")
    size = struct.unpack(">I", conn.data[1:5])[0]
    return parse_upload_response(conn.data[5:5 + size])
