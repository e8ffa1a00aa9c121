"""The package imports and works without pandas: lists of dicts, the same rows as the CLI."""

import json
import os
import subprocess

from conftest import PYTHON, SOURCE_DIR, require

SCRIPT = r"""
import json, sys
sys.modules["pandas"] = None          # as if pandas were not installed
sys.path.insert(0, sys.argv[1])
import fleetprof
assert not fleetprof.have_pandas()
c = fleetprof.Client(sys.argv[2])
pid = sys.argv[3]
kernels = c.kernels(pid)
assert type(kernels) is fleetprof.Rows and all(type(r) is dict for r in kernels)
stats = c.stats(pid)
diff = c.diff(pid, pid)
print(json.dumps({"kernels": kernels, "stats": {k: v for k, v in stats.items()},
                  "profiles": c.profiles(labels={"corpus": "1"}), "trace_attrs": c.trace(pid).attrs["profile_id"],
                  "diff_profiles": diff.attrs["profiles"], "flame": c.flamegraph(pid)[0],
                  "uploaded": c.upload(sys.argv[4], "no-pandas")}))
"""


def test_queries_and_upload_work_without_pandas(server, corpus_ids):
    require(PYTHON, "tool")
    pid = corpus_ids["a100_nccl_rank0.json.gz"]
    from conftest import corpus
    result = subprocess.run([PYTHON, "-c", SCRIPT, os.path.join(SOURCE_DIR, "client", "python"),
                             server.url, pid, corpus("kineto/mi250_rocm62.json.gz")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["kernels"] == server.cli("kernels", pid)["kernels"]
    assert got["stats"] == server.cli("stats", pid)["reports"]
    assert got["profiles"] == server.cli("profiles", "--label", "corpus=1")["profiles"]
    assert got["trace_attrs"] == pid and got["diff_profiles"] == [pid, pid]
    assert got["flame"]["name"] == "total"
    assert got["uploaded"] in [p["profile_id"] for p in server.cli("profiles", "--job", "no-pandas")["profiles"]]
