#!/usr/bin/python3
"""A stand-in for a JAX/TF job's profiler server (tensorflow.ProfilerService, docs/protocols.md).

Written apart from the C++ client under test. It compiles the project's .proto with protoc +
grpc_python_plugin at start-up and uses that generated code, but it ALSO receives Profile's
request as raw bytes and decodes them with the hand-written walker below, and it hand-encodes
ProfileResponse, both from the field numbers written in the spec. A wrong field number in
profiler_service.proto therefore shows up even though both sides are generated from it.

Modes (what Profile does after recording the request):
  emit   return the XSpace bytes of --xspace in ProfileResponse.xspace (field 8)
  file   ignore emit_xspace, write the XSpace to <repository_root>/<session_id>/<host>.xplane.pb
         (host = host_name with ':' -> '_', or --written_host) and return empty_trace=false only
  repo   what a recent server does: the XSpace in the answer when emit_xspace is set, else
         written to <repository_root>/<session_id>/<host>.xplane.pb as in file mode
  empty  return empty_trace=true
  busy   fail the first call with ALREADY_EXISTS, then behave like emit
In every mode, as the real server does (PROTOCOLS.md: one capture per process at a time), a
Profile that arrives while another one is still capturing fails with ALREADY_EXISTS; it is
counted in refused_busy. A capture lasts --sleep_ms and, with --release_file, until that file
exists (the test's word that it may end); Terminate ends it early either way.
Every event rewrites --record (flat JSON): the last request decoded both ways
(request.raw.* and request.generated.*), profile_calls, refused_busy, and the session ids
Terminate got (terminated). Run with Debian's /usr/bin/python3.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_XSPACE = os.path.normpath(os.path.join(
    HERE, "..", "..", "..", "shared", "corpus", "xspace", "tf_8gpu_multi_worker.xplane.pb"))
DEFAULT_PROTO = os.path.normpath(os.path.join(HERE, "..", "..", "proto", "tensorflow",
                                              "profiler_service.proto"))
GRPC_PYTHON_PLUGIN = "/usr/bin/grpc_python_plugin"

# ---- Hand-written protobuf wire code (no generated code), field numbers from the spec. ----

def read_varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def walk_fields(data):
    """Yields (field_number, wire_type, value) for each field of a serialized message."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = read_varint(data, pos)
        elif wire_type == 2:
            length, pos = read_varint(data, pos)
            value, pos = bytes(data[pos:pos + length]), pos + length
        elif wire_type == 1:
            value, pos = bytes(data[pos:pos + 8]), pos + 8
        elif wire_type == 5:
            value, pos = bytes(data[pos:pos + 4]), pos + 4
        else:
            raise ValueError("unsupported wire type %d in field %d" % (wire_type, number))
        yield number, wire_type, value


# ProfileRequest and ProfileOptions fields we check: spec number -> (name, kind).
PROFILE_REQUEST_FIELDS = {1: ("duration_ms", "varint"), 3: ("tools", "repeated_string"),
                          4: ("opts", "options"), 5: ("repository_root", "string"),
                          6: ("session_id", "string"), 7: ("host_name", "string"),
                          9: ("emit_xspace", "bool")}
PROFILE_OPTIONS_FIELDS = {2: ("host_tracer_level", "varint"), 3: ("device_tracer_level", "varint"),
                          4: ("python_tracer_level", "varint"), 5: ("version", "varint"),
                          8: ("start_timestamp_ns", "varint"), 9: ("duration_ms", "varint")}


def decode_raw(data, table):
    decoded = {}
    for number, wire_type, value in walk_fields(data):
        if number not in table:
            continue
        name, kind = table[number]
        expected_wire_type = 0 if kind in ("varint", "bool") else 2
        if wire_type != expected_wire_type:
            raise ValueError("field %d (%s) has wire type %d" % (number, name, wire_type))
        if kind == "varint":
            decoded[name] = value
        elif kind == "bool":
            decoded[name] = bool(value)
        elif kind == "string":
            decoded[name] = value.decode("utf-8")
        elif kind == "repeated_string":
            decoded.setdefault(name, []).append(value.decode("utf-8"))
        elif kind == "options":
            decoded[name] = decode_raw(value, PROFILE_OPTIONS_FIELDS)
    return decoded


def encode_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_profile_response(xspace=b"", empty_trace=False):
    """ProfileResponse: empty_trace = 7 (bool), xspace = 8 (length-delimited XSpace)."""
    out = b""
    if empty_trace:
        out += encode_varint(7 << 3 | 0) + b"\x01"
    if xspace:
        out += encode_varint(8 << 3 | 2) + encode_varint(len(xspace)) + xspace
    return out

def flatten(prefix, value, out):
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(prefix + key + ".", item, out)
    elif isinstance(value, list):
        out[prefix[:-1]] = ",".join(str(item) for item in value)
    else:
        out[prefix[:-1]] = value

# ---- Generated code, compiled from the project's .proto at start-up. ----

def load_generated_code(proto_path, protoc):
    if not os.path.exists(GRPC_PYTHON_PLUGIN):
        sys.exit("missing %s (Debian package protobuf-compiler-grpc)" % GRPC_PYTHON_PLUGIN)
    out_dir = tempfile.mkdtemp(prefix="xprof_standin_gen_")
    proto_root = os.path.dirname(os.path.dirname(proto_path))
    subprocess.run([protoc, "--proto_path=" + proto_root, "--python_out=" + out_dir,
                    "--grpc_python_out=" + out_dir,
                    "--plugin=protoc-gen-grpc_python=" + GRPC_PYTHON_PLUGIN, proto_path],
                   check=True)
    # A regular package, so that an installed TensorFlow cannot shadow the generated one.
    open(os.path.join(out_dir, "tensorflow", "__init__.py"), "w").close()
    sys.path.insert(0, out_dir)
    from tensorflow import profiler_service_pb2, profiler_service_pb2_grpc
    return out_dir, profiler_service_pb2, profiler_service_pb2_grpc


class StandIn:
    def __init__(self, args, pb2):
        self.args = args
        self.pb2 = pb2
        self.lock = threading.Lock()
        self.profile_calls = 0
        self.refused_busy = 0
        self.capturing = None  # the session id of the capture running now, if one is
        self.terminated = []
        self.stop_events = {}  # session_id -> Event set by Terminate
        self.last_request = {}
        self.write_record()

    def write_record(self):
        # Flat, one "dotted.key": scalar per line, so the C++ test can read it without a JSON
        # library; lists are joined with ','.
        record = {}
        flatten("", {"profile_calls": self.profile_calls, "refused_busy": self.refused_busy,
                     "terminated": self.terminated, "request": self.last_request}, record)
        tmp = self.args.record + ".tmp"
        with open(tmp, "w") as out:
            json.dump(record, out, indent=1, sort_keys=True)
        os.replace(tmp, self.args.record)

    def record_request(self, raw):
        parsed = self.pb2.ProfileRequest.FromString(raw)
        generated = {
            "duration_ms": parsed.duration_ms, "tools": list(parsed.tools),
            "repository_root": parsed.repository_root, "session_id": parsed.session_id,
            "host_name": parsed.host_name, "emit_xspace": parsed.emit_xspace,
            "opts": {"host_tracer_level": parsed.opts.host_tracer_level,
                     "device_tracer_level": parsed.opts.device_tracer_level,
                     "python_tracer_level": parsed.opts.python_tracer_level,
                     "version": parsed.opts.version,
                     "start_timestamp_ns": parsed.opts.start_timestamp_ns,
                     "duration_ms": parsed.opts.duration_ms}}
        with self.lock:
            self.profile_calls += 1
            self.last_request = {"generated": generated, "raw": decode_raw(raw, PROFILE_REQUEST_FIELDS),
                                 "received_unix_ns": time.time_ns()}
            self.stop_events.setdefault(parsed.session_id, threading.Event())
            self.write_record()
            return parsed, self.profile_calls, self.stop_events[parsed.session_id]

    def begin_capture(self, session_id):
        """Claims the process's one profiler session; False when another capture holds it."""
        with self.lock:
            if self.capturing is not None:
                self.refused_busy += 1
                self.write_record()
                return False
            self.capturing = session_id
            return True

    def end_capture(self):
        with self.lock:
            self.capturing = None

    def profile(self, raw, context):
        request, call_number, stopped = self.record_request(raw)
        if self.args.mode == "busy" and call_number == 1:
            context.abort(self.grpc.StatusCode.ALREADY_EXISTS, "Another profiling session active.")
        if not self.begin_capture(request.session_id):
            context.abort(self.grpc.StatusCode.ALREADY_EXISTS, "Another profiling session active.")
        try:
            return self.capture(request, stopped)
        finally:
            self.end_capture()

    def capture(self, request, stopped):
        # A capture lasts opts.duration_ms when --sleep_ms is negative; Terminate ends it early.
        sleep_ms = request.opts.duration_ms if self.args.sleep_ms < 0 else self.args.sleep_ms
        stopped.wait(sleep_ms / 1000.0)
        if self.args.release_file:
            while not stopped.is_set() and not os.path.exists(self.args.release_file):
                stopped.wait(0.05)
        if self.args.mode == "empty":
            return encode_profile_response(empty_trace=True)
        with open(self.args.xspace, "rb") as source:
            xspace = source.read()
        if self.args.mode == "file" or (self.args.mode == "repo" and not request.emit_xspace):
            host = self.args.written_host or request.host_name.replace(":", "_")
            root = self.args.write_root or request.repository_root
            folder = os.path.join(root, request.session_id)
            if self.args.link_session:
                # A hostile job: its session folder is a link to a folder of someone else's.
                os.symlink(self.args.link_session, folder)
                return encode_profile_response()
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, host + ".xplane.pb"), "wb") as out:
                out.write(xspace)
            return encode_profile_response()
        return encode_profile_response(xspace=xspace)

    def terminate(self, request, context):
        with self.lock:
            self.terminated.append(request.session_id)
            self.stop_events.setdefault(request.session_id, threading.Event()).set()
            self.write_record()
        return self.pb2.TerminateResponse()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=["emit", "file", "repo", "empty", "busy"], default="emit")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--xspace", default=DEFAULT_XSPACE)
    parser.add_argument("--proto", default=DEFAULT_PROTO)
    parser.add_argument("--protoc", default=shutil.which("protoc") or "/usr/bin/protoc")
    parser.add_argument("--record", required=True, help="JSON file the requests are recorded in")
    parser.add_argument("--ready", help="file that receives {\"port\": N} once serving")
    parser.add_argument("--sleep_ms", type=int, default=200,
                        help="time a capture takes; negative = opts.duration_ms")
    parser.add_argument("--release_file", default="",
                        help="a capture also lasts until this file exists (Terminate ends it early)")
    parser.add_argument("--written_host", default="", help="file mode: name the file after this")
    parser.add_argument("--write_root", default="", help="file mode: write here, not repository_root")
    parser.add_argument("--link_session", default="",
                        help="file/repo mode: make the session folder a symlink to this folder, write nothing")
    args = parser.parse_args()

    import grpc  # Debian's python3-grpcio
    gen_dir, pb2, pb2_grpc = load_generated_code(args.proto, args.protoc)
    standin = StandIn(args, pb2)
    standin.grpc = grpc

    class Servicer(pb2_grpc.ProfilerServiceServicer):
        def Terminate(self, request, context):
            return standin.terminate(request, context)

    # Raw bytes in and out for Profile (no (de)serializers), so the walker sees the wire.
    raw_profile = grpc.method_handlers_generic_handler("tensorflow.ProfilerService", {
        "Profile": grpc.unary_unary_rpc_method_handler(standin.profile)})
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8),
                         handlers=[raw_profile],
                         options=[("grpc.max_send_message_length", -1),
                                  ("grpc.max_receive_message_length", -1)])
    pb2_grpc.add_ProfilerServiceServicer_to_server(Servicer(), server)  # Terminate, Monitor
    port = server.add_insecure_port("127.0.0.1:%d" % args.port)
    server.start()
    # The test stops us with SIGTERM: stop serving so that the generated code is cleaned up.
    signal.signal(signal.SIGTERM, lambda signum, frame: server.stop(0))
    print("PORT %d" % port, flush=True)
    if args.ready:
        with open(args.ready + ".tmp", "w") as out:
            json.dump({"port": port}, out)
        os.replace(args.ready + ".tmp", args.ready)
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        pass
    finally:
        shutil.rmtree(gen_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
