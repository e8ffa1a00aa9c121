"""Upload and capture through the client reach INDEXED; a failed capture raises with its reason."""

import json
import os

import pytest

import fleetprof
from conftest import PYTHON, SOURCE_DIR, Process, corpus, eventually, require, wait_for_file


def test_upload_returns_an_indexed_profile_equal_to_the_cli_upload(client, server):
    path = corpus("kineto/mi250_rocm62.json.gz")
    pid = client.upload(path, "py-upload", labels={"team": "notebook"})
    assert isinstance(pid, str) and pid
    listed = fleetprof.records(client.profiles(job="py-upload"))
    assert [p["profile_id"] for p in listed] == [pid]
    assert listed[0]["labels"]["team"] == "notebook"
    cli_id = server.cli("upload", path, "--job", "py-upload-cli")["profile_id"]
    assert fleetprof.records(client.kernels(pid)) == fleetprof.records(client.kernels(cli_id))


def test_upload_with_the_same_upload_id_stores_the_file_once(client):
    path = corpus("nsys/saxpy_a100.sqlite.gz")
    first = client.upload(path, "py-idempotent", upload_id="py-test-idempotent")
    assert client.upload(path, "py-idempotent", upload_id="py-test-idempotent") == first
    assert len(fleetprof.records(client.profiles(job="py-idempotent"))) == 1


def test_upload_of_a_file_that_is_no_trace_is_invalid_argument(client, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("not a trace")
    with pytest.raises(fleetprof.InvalidArgument) as e:
        client.upload(str(bad), "py-bad")
    assert "unknown trace format" in e.value.message


@pytest.fixture(scope="module")
def xprof_job(server, tmp_root):
    """A stand-in JAX profiler server (tests/xprof/profiler_standin.py) and an agent targeting it."""
    require(PYTHON, "tool")
    xspace = corpus("xspace/tf_8gpu_multi_worker.xplane.pb")
    folder = os.path.join(tmp_root, "xprof")
    os.makedirs(folder, exist_ok=True)
    ready = os.path.join(folder, "standin.ready")
    standin = Process([PYTHON, os.path.join(SOURCE_DIR, "tests", "xprof", "profiler_standin.py"),
                       "--mode", "emit", "--record", os.path.join(folder, "requests.json"),
                       "--ready", ready, "--xspace", xspace], os.path.join(folder, "standin.log"))
    text = wait_for_file(ready, 60)
    assert text, "profiler stand-in did not start:\n" + standin.text()
    address = "127.0.0.1:%d" % json.loads(text)["port"]
    server.start_agent("--node=py-gpu-1", "--target=job=py-jax,xprof=" + address)
    assert eventually(15, lambda: address in json.dumps(server.cli("agents")))
    yield address
    standin.stop()


def test_capture_wait_returns_indexed_profiles(client, server, xprof_job, capsys):
    handle = client.capture("py-jax", duration_ms=300)
    assert handle.capture_id
    ids = handle.wait(progress=True, timeout=120)
    assert handle.state == "DONE" and len(ids) == 1
    assert all(t["state"] == "INDEXED" for t in fleetprof.records(handle.targets))
    reference = json.load(open(corpus("reference/tf_8gpu_multi_worker.xplane.ref.json")))
    assert fleetprof.records(client.kernels(ids[0])) == reference["kernels"]
    err = capsys.readouterr().err
    assert handle.capture_id in err and "INDEXED" in err  # the progress line
    assert server.cli("captures", "--job", "py-jax")["captures"][0]["capture_id"] == handle.capture_id


def test_capture_of_a_job_without_targets_raises_with_the_reason(client, xprof_job):
    handle = client.capture("py-nobody-runs-this", duration_ms=100)
    with pytest.raises(fleetprof.CaptureFailed) as e:
        handle.wait(progress=False, timeout=60)
    assert "no process matched" in e.value.message
    assert e.value.profile_ids == []


def test_capture_progress_in_a_notebook_updates_one_display(client, xprof_job, monkeypatch):
    from fleetprof import capture as capture_module

    shown = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj.data))

    class FakeDisplay:
        @staticmethod
        def HTML(text):
            return type("HTML", (), {"data": text})()

        @staticmethod
        def display(obj, display_id=False):
            shown.append(("display", obj.data))
            return Handle()

    monkeypatch.setattr(capture_module, "_progress_display",
                        lambda: capture_module._NotebookProgress(FakeDisplay))
    ids = client.capture("py-jax", duration_ms=200).wait(timeout=120)
    assert len(ids) == 1
    assert [kind for kind, _ in shown].count("display") == 1
    assert "<progress" in shown[-1][1] and "INDEXED" in shown[-1][1]


def test_capture_progress_on_a_terminal_is_one_line_rewritten(client, xprof_job):
    import io
    from fleetprof import capture as capture_module

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    progress = capture_module._TerminalProgress(screen)
    handle = client.capture("py-jax", duration_ms=200)
    while True:
        progress.update(handle)
        if handle.done():
            break
        handle.refresh()
    progress.close()
    text = screen.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n") and text.startswith("\r")
    assert "[1/1]" in text and "INDEXED" in text
