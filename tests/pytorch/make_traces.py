#!/usr/bin/python3
"""Profiles a few small PyTorch models on the CPU and writes, for each model:
  OUTDIR/<model>.json               the profiler's chrome trace (prof.export_chrome_trace)
  OUTDIR/<model>.key_averages.json  [{name, count, cpu_time_total_us}] from prof.key_averages()
so that check_key_averages.py can compare fleetprof's op breakdown with torch's own numbers.

Runs with Debian's /usr/bin/python3 (torch 1.13 CPU). Exit status 3 means torch is missing.
Each model trains a few steps under a profiler schedule (1 wait, 1 warmup, 3 active steps), so
the trace has ProfilerStep#N annotations as real training captures do. Takes a few seconds.
"""

import json
import os
import sys

TORCH_MISSING = 3

try:
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, schedule
except ImportError as error:
    print(f"torch cannot be imported: {error}", file=sys.stderr)
    sys.exit(TORCH_MISSING)


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class SmallLstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.lstm = nn.LSTM(32, 32, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1])


class SmallTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.encoder = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


def models():
    """(name, model, input batch) for each profiled model; labels are 10 classes."""
    return [
        ("mlp", nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)),
         torch.randn(32, 64)),
        ("cnn", SmallCnn(), torch.randn(8, 3, 16, 16)),
        ("lstm", SmallLstm(), torch.randint(0, 100, (8, 12))),
        ("transformer", SmallTransformer(), torch.randint(0, 100, (8, 12))),
    ]


def key_averages_rows(prof):
    return [{"name": avg.key, "count": avg.count, "cpu_time_total_us": avg.cpu_time_total}
            for avg in prof.key_averages()]


def profile_model(name, model, inputs, out_dir):
    labels = torch.randint(0, 10, (inputs.shape[0],))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    # Export inside on_trace_ready so the trace and key_averages() describe the same cycle.
    def export(prof):
        prof.export_chrome_trace(os.path.join(out_dir, f"{name}.json"))
        with open(os.path.join(out_dir, f"{name}.key_averages.json"), "w") as f:
            json.dump(key_averages_rows(prof), f, indent=1)

    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=export) as prof:
        for _ in range(5):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
            prof.step()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_traces.py OUTDIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    for name, model, inputs in models():
        profile_model(name, model, inputs, out_dir)
        print(f"{name}: {os.path.join(out_dir, name + '.json')}")


if __name__ == "__main__":
    main()
