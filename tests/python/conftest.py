"""Fixtures of the Python client's tests: a real fleetprof-server (and agent) started from the
built binaries on ephemeral loopback ports, as tests/e2e/test_cluster.cc does, and the CLI to
compare with. Binaries come from $FLEETPROF_BIN_DIR (ctest sets it), the corpus from
$FLEETPROF_SHARED_DIR. With CI=true a missing binary, tool or corpus file fails, never skips."""

import glob
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN_DIR = os.environ.get("FLEETPROF_BIN_DIR") or os.path.join(SOURCE_DIR, "build", "bin")
SHARED_DIR = os.environ.get("FLEETPROF_SHARED_DIR") or os.path.join(SOURCE_DIR, "..", "shared")
PYTHON = "/usr/bin/python3"
sys.path.insert(0, os.path.join(SOURCE_DIR, "client", "python"))

import fleetprof  # noqa: E402  (from the checkout, not an installed copy)


def in_ci():
    return os.environ.get("CI", "").lower() == "true"


def require(path, what="file"):
    """Fails under CI, skips elsewhere, when `path` is missing."""
    if not os.path.exists(path):
        message = "missing %s %s" % (what, path)
        if in_ci():
            pytest.fail(message + " (CI=true: a missing tool or corpus file fails)")
        pytest.skip(message)
    return path


def corpus(relative):
    return require(os.path.join(SHARED_DIR, "corpus", relative), "corpus file")


def corpus_traces():
    """Every Kineto and nsys corpus trace (the queries' comparison set)."""
    found = sorted(glob.glob(os.path.join(SHARED_DIR, "corpus", "kineto", "*.json.gz")) +
                   glob.glob(os.path.join(SHARED_DIR, "corpus", "nsys", "*.sqlite.gz")))
    return found


def wait_for_file(path, timeout_s):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
            if text.strip():
                return text
        time.sleep(0.05)
    return ""


class Process:
    def __init__(self, argv, log, env=None):
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                         env=dict(os.environ, **(env or {})))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


class Server:
    """A fleetprof-server in its own folder; `url` its HTTP listener, `grpc` its gRPC one."""

    def __init__(self, root, extra=(), scheme="http"):
        require(os.path.join(BIN_DIR, "fleetprof-server"), "binary")
        require(os.path.join(BIN_DIR, "fleetprof"), "binary")
        self.root = root
        os.makedirs(root, exist_ok=True)
        ready = os.path.join(root, "server.ready")
        self.process = Process([os.path.join(BIN_DIR, "fleetprof-server"), "--grpc_addr=127.0.0.1:0",
                                "--http_addr=127.0.0.1:0", "--data_dir=" + os.path.join(root, "data"),
                                "--ready_file=" + ready, "--heartbeat_ms=200"] + list(extra),
                               os.path.join(root, "server.log"))
        text = wait_for_file(ready, 30)
        assert text, "server did not get ready:\n" + self.process.text()
        addresses = json.loads(text)
        self.grpc, self.http = addresses["grpc"], addresses["http"]
        self.url = "%s://%s" % (scheme, self.http)
        self.agents = []
        self.cli_flags = []

    def cli(self, *args, timeout=180, check=True):
        """Runs `fleetprof ARGS --server GRPC --json` and returns its JSON (or the result)."""
        argv = [os.path.join(BIN_DIR, "fleetprof")] + [str(a) for a in args] + \
            ["--server", self.grpc, "--json"] + self.cli_flags
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if not check:
            return result
        assert result.returncode == 0, "%s: %s" % (" ".join(argv), result.stderr)
        return json.loads(result.stdout)

    def start_agent(self, *extra):
        index = len(self.agents)
        own = os.path.join(self.root, "agent%d" % index)
        os.makedirs(own, exist_ok=True)
        ready = own + ".ready"
        agent = Process([os.path.join(BIN_DIR, "fleetprof-agent"), "--server=" + self.grpc,
                         "--metrics_addr=127.0.0.1:0", "--ready_file=" + ready, "--state_dir=" + own,
                         "--kineto_socket_dir=" + own, "--kineto_trace_dir=" + own + "/kineto_traces",
                         "--dynolog_addr=127.0.0.1:0", "--nvml_library="] + list(extra),
                        own + ".log")
        self.agents.append(agent)
        assert wait_for_file(ready, 30), "agent did not get ready:\n" + agent.text()
        return agent

    def stop(self):
        for agent in self.agents:
            agent.stop()
        self.process.stop()


def eventually(timeout_s, predicate):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.fixture(scope="session")
def tmp_root():
    root = tempfile.mkdtemp(prefix="fleetprof-python-")
    yield root
    subprocess.run(["rm", "-rf", root])


@pytest.fixture(scope="session")
def server(tmp_root):
    s = Server(os.path.join(tmp_root, "plain"))
    yield s
    s.stop()


@pytest.fixture(scope="session")
def client(server):
    return fleetprof.Client(server.url)


@pytest.fixture(scope="session")
def corpus_ids(server):
    """{file name: profile id} of every corpus trace, uploaded with the CLI (job = its stem)."""
    traces = corpus_traces()
    if not traces:
        corpus("kineto/v100_resnet_rank0.pt.trace.json.gz")  # fails under CI, skips elsewhere
    ids = {}
    for path in traces:
        name = os.path.basename(path)
        job = name.split(".")[0].replace("_", "-")
        ids[name] = server.cli("upload", path, "--job", job, "--label", "corpus=1")["profile_id"]
    return ids


def make_pki(folder):
    """ca.pem, server.pem/key for 127.0.0.1 and localhost, other.pem (a CA nobody trusts), as
    tests/e2e/test_pki.cc makes them."""
    require("/usr/bin/openssl", "tool")
    os.makedirs(folder, exist_ok=True)
    script = (
        "set -e; cd '%s'; "
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca 2>/dev/null; "
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext; "
        "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null; "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
        "-extfile san.ext 2>/dev/null; "
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 -subj /CN=other 2>/dev/null"
    ) % folder
    subprocess.run(["/bin/sh", "-c", script], check=True, timeout=120)
    return folder


def tokens_file(path, principals):
    """Writes a --auth_tokens_file: {token: (scopes, name)}; mode 0600."""
    with open(path, "w") as f:
        for token, (scopes, name) in principals.items():
            f.write("%s %s %s\n" % (hashlib.sha256(token.encode()).hexdigest(), scopes, name))
    os.chmod(path, 0o600)
    return path
