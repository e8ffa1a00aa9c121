#!/usr/bin/python3
"""Opens the trace viewer of one profile in headless Chromium and prints how long after the
navigation its first view was drawn (the page's own performance.now(), median of --runs loads).
Uses the DevTools client of tests/web/browser_check.py."""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../tests/web"))
import browser_check  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--profile-id", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--screenshot-dir", default="/tmp")
    args = parser.parse_args()
    b = browser_check.Browser("/usr/bin/chromium", args.url, args.screenshot_dir)
    try:
        b.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1,
                                                      "mobile": False})
        times = []
        for _ in range(args.runs):
            b.navigate(f"/profiles/{args.profile_id}/trace")
            b.wait_for("Number(document.querySelector('.trace-viewer')?.dataset.loaded || 0) >= 1",
                       "the first view", timeout=60)
            times.append(b.evaluate("Number(document.querySelector('.trace-viewer').dataset.firstViewMs)"))
        status = b.evaluate("document.querySelector('.trace-status').textContent")
        shot = b.screenshot("trace_10m_first_view")
        b.assert_clean("first view")
        print(f"viewer first view: median {statistics.median(times):.0f} ms over {len(times)} loads "
              f"(each {', '.join(f'{t:.0f}' for t in times)} ms); {status}; screenshot {shot}")
    finally:
        b.close()


if __name__ == "__main__":
    main()
