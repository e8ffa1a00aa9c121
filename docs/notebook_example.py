# %% [markdown]
# # fleetprof from a notebook
# Runs top to bottom against the server `scripts/run.sh` starts (http://127.0.0.1:7071), or the
# one in $FLEETPROF_HTTP. Each `# %%` is a cell (Jupyter, VS Code); `python3 docs/notebook_example.py`
# runs it as a script. Traces come from ../shared/corpus (or $FLEETPROF_CORPUS).
#
#     python3 docs/notebook_example.py

# %%
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "client", "python"))  # not needed once pip-installed
import fleetprof

corpus = os.environ.get("FLEETPROF_CORPUS") or os.path.join(here, "..", "..", "shared", "corpus")
fp = fleetprof.Client()  # $FLEETPROF_HTTP or http://127.0.0.1:7071; $FLEETPROF_TOKEN if set
print(fp, "pandas" if fleetprof.have_pandas() else "no pandas: lists of dicts")

# %% Upload two traces (once each: the upload id makes it idempotent)
resnet = fp.upload(os.path.join(corpus, "kineto", "v100_resnet_rank0.pt.trace.json.gz"), "resnet",
                   labels={"gpu": "v100"}, upload_id="notebook-resnet")
nccl = fp.upload(os.path.join(corpus, "kineto", "a100_nccl_rank0.json.gz"), "nccl",
                 labels={"gpu": "a100"}, upload_id="notebook-nccl")
saxpy = fp.upload(os.path.join(corpus, "nsys", "saxpy_a100.sqlite.gz"), "saxpy",
                  upload_id="notebook-saxpy")

# %% The profiles, newest first
profiles = fp.profiles()
print(profiles)

# %% One profile: in Jupyter this cell shows job, span, a busy bar per device and the top kernels
profile = fp.profile(resnet)
profile

# %% Kernels and ops as DataFrames: sort, filter, plot as usual
kernels = fp.kernels(resnet)
ops = fp.ops(resnet)
if fleetprof.have_pandas():
    print(kernels.sort_values("total_ns", ascending=False).head(5)[["name", "count", "total_ns"]])
    print(ops.nlargest(5, "device_total_ns")[["name", "count", "device_total_ns"]])
else:
    print(sorted(kernels, key=lambda k: -k["total_ns"])[:5])

# %% Devices and steps
print(fp.devices(nccl))
print(fp.steps(nccl))

# %% nsys stats reports: a dict of tables by report name, or one report's table
reports = fp.stats(saxpy)
print(list(reports), "open NVTX ranges:", reports.nvtx_open_ranges)
print(fp.stats(saxpy, report="cuda_gpu_kern_sum"))

# %% Compare two profiles kernel by kernel
diff = fp.diff(resnet, nccl, by="kernel", limit=10)
print(diff.attrs["profiles"])
print(fleetprof.records(diff)[0]["name"], fleetprof.records(diff)[0]["status"])

# %% Diagnosis, the job's series, a trace window, the flame graph
print(fp.diagnose(nccl))
print(fp.job_series("nccl"))
info = profile.info
window = fp.trace(resnet, start_ns=info["start_ns"], end_ns=info["start_ns"] + 10_000_000,
                  resolution_ns=10_000)
print(len(window), "events in the first 10 ms")
flame = fp.flamegraph(resnet, value="device_ns")
print(flame.attrs["total"], "ns of device time in the call tree")

# %% Export the original file back
out = fp.export(resnet, os.path.join(os.environ.get("TMPDIR", "/tmp"), "resnet.json.gz"))
print("exported", out, os.path.getsize(out), "bytes")

# %% Fleet accounting (needs a server with always-on profiling, issue 42)
try:
    print(fp.fleet_top(by="kernel", since="24h"))
except fleetprof.NotFound as e:
    print("fleet top:", e.message)

# %% Capture a running job (run a job with FLEETPROF_JOB=my-job first; nothing runs here)
try:
    ids = fp.capture("my-job", duration_ms=2000).wait()
    print("captured", ids)
except fleetprof.CaptureFailed as e:
    print("capture failed:", e.message)
