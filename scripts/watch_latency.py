#!/usr/bin/env python3
"""Time from saving a watched scenario to `gridarena view --watch` reporting the reload.

Runs the viewer under xvfb-run on a copy of assets/scenarios/pursuit_3.ron, saves 7 edits
(max_steps changed) and prints the milliseconds from each write to the `reloaded` line on stdout.
Usage: cargo build && python3 scripts/watch_latency.py [BINARY]
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target/debug/gridarena")
work = tempfile.mkdtemp()
scenario = os.path.join(work, "s.ron")
shutil.copy(os.path.join(root, "assets/scenarios/pursuit_3.ron"), scenario)
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp/gridarena-xdg")
os.makedirs(os.environ["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
view = subprocess.Popen(
    ["xvfb-run", "-a", binary, "view", "--scenario", scenario, "--watch"],
    stdout=subprocess.PIPE, text=True, start_new_session=True)


def wait(prefix):
    for line in view.stdout:
        if line.startswith(prefix):
            return time.monotonic()
    sys.exit(f"the viewer ended before printing '{prefix}'")


try:
    wait("watching")
    time.sleep(2)
    original = open(scenario).read()
    latencies = []
    for i in range(7):
        text = original.replace("max_steps: 50", f"max_steps: {51 + i}")
        start = time.monotonic()
        with open(scenario, "w") as f:
            f.write(text)
        latencies.append((wait("reloaded") - start) * 1000)
        time.sleep(0.5)
    print("write -> reloaded (ms):", [round(x) for x in latencies],
          "median", round(statistics.median(latencies)))
finally:
    os.killpg(view.pid, signal.SIGTERM)
    shutil.rmtree(work)
