"""Each error class comes from the HTTP status it maps; tokens and TLS work end to end."""

import http.server
import json
import os
import threading

import pytest

import fleetprof
from conftest import Server, corpus, make_pki, tokens_file


# ---- the mapping, status by status, against a stand-in listener ----

class _Answer(http.server.BaseHTTPRequestHandler):
    status = 500

    def do_GET(self):
        status = int(self.path.rsplit("/", 1)[-1].split("?")[0])
        body = json.dumps({"error": {"code": "CODE_%d" % status, "message": "server says %d" % status}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def standin_url():
    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % listener.server_address[1]
    listener.shutdown()


@pytest.mark.parametrize("status,cls", [
    (400, fleetprof.InvalidArgument), (401, fleetprof.Unauthenticated),
    (403, fleetprof.PermissionDenied), (404, fleetprof.NotFound), (503, fleetprof.Unavailable),
    (429, fleetprof.Error), (500, fleetprof.Error)])
def test_http_status_maps_to_its_error_class(standin_url, status, cls):
    with pytest.raises(fleetprof.Error) as e:
        fleetprof.Client(standin_url).get("/api/v1/status/%d" % status)
    assert type(e.value) is cls
    assert e.value.status == status and e.value.code == "CODE_%d" % status
    assert e.value.message == "server says %d" % status


def test_unreachable_server_is_unavailable():
    with pytest.raises(fleetprof.Unavailable) as e:
        fleetprof.Client("http://127.0.0.1:1", timeout=5).profiles()
    assert "cannot reach http://127.0.0.1:1" in e.value.message


# ---- the real server's answers ----

def test_unknown_profile_is_not_found_with_the_servers_message(client):
    with pytest.raises(fleetprof.NotFound) as e:
        client.kernels("0123456789abcdef01234567")
    assert e.value.status == 404 and e.value.code == "NOT_FOUND"
    assert "0123456789abcdef01234567" in e.value.message


def test_bad_parameter_is_invalid_argument(client, corpus_ids):
    pid = next(iter(corpus_ids.values()))
    with pytest.raises(fleetprof.InvalidArgument) as e:
        client.diff(pid, pid, by="nonsense")
    assert e.value.status == 400
    with pytest.raises(fleetprof.InvalidArgument) as e:
        client.get("/api/v1/profiles", bogus="1")
    assert "bogus" in e.value.message


@pytest.fixture(scope="module")
def secure_server(tmp_root):
    """A server with tokens and TLS: reader (read), writer (read, ingest, capture)."""
    folder = os.path.join(tmp_root, "secure")
    pki = make_pki(os.path.join(folder, "pki"))
    tokens = tokens_file(os.path.join(folder, "tokens"), {
        "reader-token-0123456789": ("read", "reader"),
        "writer-token-0123456789": ("read,ingest,capture", "writer")})
    server = Server(folder, ["--auth_tokens_file=" + tokens, "--tls_cert=" + pki + "/server.pem",
                             "--tls_key=" + pki + "/server.key"], scheme="https")
    with open(os.path.join(folder, "writer.token"), "w") as f:
        f.write("writer-token-0123456789")
    server.cli_flags = ["--tls_ca", pki + "/ca.pem", "--token_file", os.path.join(folder, "writer.token")]
    server.pki = pki
    yield server
    server.stop()


def test_tokens_and_tls_upload_and_query(secure_server):
    ca = secure_server.pki + "/ca.pem"
    writer = fleetprof.Client(secure_server.url, token="writer-token-0123456789", ca=ca)
    pid = writer.upload(corpus("kineto/a100_alexnet.json.gz"), "secure-job")  # gRPC over TLS
    reader = fleetprof.Client(secure_server.url, token="reader-token-0123456789", ca=ca)
    assert fleetprof.records(reader.kernels(pid)) == secure_server.cli("kernels", pid)["kernels"]
    assert [p["profile_id"] for p in fleetprof.records(reader.profiles())] == [pid]
    assert fleetprof.records(reader.profiles())[0]["labels"]["uploaded_by"] == "writer"


def test_tokens_come_from_the_environment(secure_server, monkeypatch):
    monkeypatch.setenv("FLEETPROF_HTTP", secure_server.url)
    monkeypatch.setenv("FLEETPROF_TOKEN", "reader-token-0123456789")
    client = fleetprof.Client(ca=secure_server.pki + "/ca.pem")
    assert client.url == secure_server.url
    client.profiles()


def test_missing_token_is_unauthenticated(secure_server, monkeypatch):
    monkeypatch.delenv("FLEETPROF_TOKEN", raising=False)
    with pytest.raises(fleetprof.Unauthenticated) as e:
        fleetprof.Client(secure_server.url, ca=secure_server.pki + "/ca.pem").profiles()
    assert e.value.status == 401 and e.value.message


def test_token_without_the_scope_is_permission_denied(secure_server):
    reader = fleetprof.Client(secure_server.url, token="reader-token-0123456789",
                              ca=secure_server.pki + "/ca.pem")
    with pytest.raises(fleetprof.PermissionDenied) as e:
        reader.capture("secure-job", duration_ms=100)
    assert e.value.status == 403 and "capture" in e.value.message
    with pytest.raises(fleetprof.PermissionDenied) as e:  # over gRPC: the upload needs ingest
        reader.upload(corpus("kineto/a100_alexnet.json.gz"), "secure-job")
    assert "ingest" in e.value.message


def test_unknown_token_over_grpc_is_unauthenticated(secure_server):
    stranger = fleetprof.Client(secure_server.url, token="nobody-knows-this-token",
                                ca=secure_server.pki + "/ca.pem")
    with pytest.raises(fleetprof.Unauthenticated):
        stranger.upload(corpus("kineto/a100_alexnet.json.gz"), "secure-job", upload_id="py-stranger")


def test_a_ca_that_did_not_sign_the_server_is_refused(secure_server):
    wrong = fleetprof.Client(secure_server.url, token="reader-token-0123456789",
                             ca=secure_server.pki + "/other.pem")
    with pytest.raises(fleetprof.Unavailable) as e:
        wrong.profiles()
    assert "check that `ca` signed the server's certificate" in e.value.message
