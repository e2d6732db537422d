#!/usr/bin/env python3
"""Data-parallel scaling on this machine, side by side in one run, and a projection to a cluster.

    python3 benches/scaling/run.py [--bin target/release/gridarena] [--repeats 3]

Builds nothing: the binary must have the `mpi` feature (`cargo build --release --features mpi`).
For Pursuit (the default run) and the coin game (assets/runs/pqn_coin.ron), CPU critic, trains
the same global batch two ways, REPEATS times each, alternating:

  -np 1, 2 threads, `arenas` arenas
  -np 2, 1 thread per rank, `arenas / 2` arenas per rank (the same global batch)

and reports, as medians over the repeats: env steps/s including learning (from metrics.jsonl,
leaving out the first update), the allreduce time and bytes per update (rank 0's), and the share
of an update spent in the allreduce. Then projects 16 nodes x 4 GPUs (64 ranks, ~200,000 arenas)
with the ring-allreduce model stated in docs/scaling.md. Output under $OUT (default
/tmp/gridarena-scaling); results also as results.json there.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

CASES = [
    # name, config args, env steps per run (global), arenas of the one-rank run
    ("pursuit", [], 600_000, 256),
    ("coin", ["--config", "assets/runs/pqn_coin.ron"], 1_500_000, 256),
]

# The networks and rollout of each case (the default run's and pqn_coin.ron's): observation
# bytes, hidden width, hidden layers, head, learners per arena, rollout, epochs.
SHAPES = {
    "pursuit": (147, 128, 2, 5, 8, 32, 2),
    "coin": (36, 128, 2, 5, 2, 32, 2),
}
# Minibatches per epoch (optimiser steps per update = epochs x minibatches).
MINIBATCHES = {"pursuit": 8, "coin": 4}


def learner_flops(shape, arenas):
    """FLOPs of one PQN update of `arenas` arenas: the acting forward passes of the rollout and
    `epochs` passes of forward, weight and input gradients over its rows (the formula of
    StackSpec::update_flops_per_row)."""
    d, h, layers, head, learners, rollout, epochs = shape
    dims = [d] + [h] * layers + [head]
    macs = [a * b for a, b in zip(dims, dims[1:])]
    fwd, d_input = sum(macs), sum(macs[1:])
    rows = arenas * learners * rollout
    return (rollout + 1) * arenas * learners * 2 * fwd + epochs * rows * 2 * (2 * fwd + d_input)


def run(binary, out, case_args, steps, arenas, np_, threads):
    shutil.rmtree(out, ignore_errors=True)
    per_rank = arenas // np_
    cmd = [
        "mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
        "-np", str(np_), "-x", f"RAYON_NUM_THREADS={threads}",
        binary, "train", *case_args, "--device", "cpu", "--threads", str(threads),
        "--steps", str(steps // np_), "--set", f"arenas={per_rank}",
        "--set", "checkpoint_every=1000000", "--out", out,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stdout}\n{done.stderr}")
    lines = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl"))]
    first, last = lines[0], lines[-1]
    sps = (last["env_steps"] - first["env_steps"]) / (last["seconds"] - first["seconds"])
    update_s = (last["seconds"] - first["seconds"]) / (len(lines) - 1)
    ar_s = statistics.median(l.get("allreduce_seconds", 0.0) for l in lines[1:])
    ar_b = statistics.median(l.get("allreduce_bytes", 0) for l in lines[1:])
    calls = statistics.median(l.get("allreduce_calls", 0) for l in lines[1:])
    return {"sps": sps, "update_s": update_s, "allreduce_s": ar_s,
            "allreduce_bytes": ar_b, "allreduce_calls": calls,
            "updates": len(lines)}


def ring_seconds(bytes_, ranks, bandwidth, latency):
    """Ring allreduce of `bytes_` over `ranks`: 2(N-1) steps, each moving bytes/N per link."""
    if ranks == 1:
        return 0.0
    return 2 * (ranks - 1) / ranks * bytes_ / bandwidth + 2 * (ranks - 1) * latency


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="target/release/gridarena")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--bandwidth", type=float, default=12.5e9,
                   help="bytes/s per rank's link in the projection (default 100 Gb/s)")
    p.add_argument("--latency", type=float, default=5e-6,
                   help="seconds per ring step in the projection (default 5 us)")
    p.add_argument("--gpu-tflops", type=float, default=20.0,
                   help="sustained f32 TFLOP/s of one GPU in the projection (default 20: about "
                        "30%% of an H100's 67 TFLOP/s f32 peak)")
    p.add_argument("--from", dest="previous", metavar="RESULTS_JSON",
                   help="project from an earlier run's results.json instead of measuring")
    a = p.parse_args()
    out = os.environ.get("OUT", "/tmp/gridarena-scaling")
    os.makedirs(out, exist_ok=True)
    results = {}
    if a.previous:
        results = json.load(open(a.previous))
        results.pop("projection", None)
        results = {k: {"median": {int(n): m for n, m in v["median"].items()}, "runs": v["runs"]}
                   for k, v in results.items()}
    for name, args, steps, arenas in CASES if not a.previous else []:
        rows = {1: [], 2: []}
        for r in range(a.repeats):
            for np_, threads in ((1, 2), (2, 1)):
                m = run(a.bin, os.path.join(out, f"{name}-np{np_}-{r}"), args, steps, arenas,
                        np_, threads)
                rows[np_].append(m)
                print(f"{name} -np {np_} ({threads} thread(s) each) repeat {r + 1}: "
                      f"{m['sps']:.0f} env steps/s, allreduce {m['allreduce_s'] * 1e3:.2f} ms "
                      f"and {m['allreduce_bytes'] / 1e6:.2f} MB per update", flush=True)
        med = {np_: {k: statistics.median(x[k] for x in v) for k in v[0]}
               for np_, v in rows.items()}
        results[name] = {"runs": rows, "median": med}
        one, two = med[1], med[2]
        print(f"{name}: median -np 1 {one['sps']:.0f} env steps/s, -np 2 {two['sps']:.0f} "
              f"({two['sps'] / one['sps']:.2f}x); allreduce {two['allreduce_s'] * 1e3:.2f} ms "
              f"of a {two['update_s'] * 1e3:.1f} ms update "
              f"({100 * two['allreduce_s'] / two['update_s']:.1f}%), "
              f"{two['allreduce_bytes'] / 1e6:.2f} MB in {two['allreduce_calls']:.0f} calls",
              flush=True)
    # Projection: 64 ranks, 200,000 arenas in all (3,125 per rank).
    print("\nprojection: 16 nodes x 4 GPUs = 64 ranks, 200,000 arenas (3,125 per rank); ring "
          f"allreduce, {a.bandwidth / 1e9:.1f} GB/s per link, {a.latency * 1e6:.0f} us per step")
    proj = {}
    for name in results:
        two = results[name]["median"][2]
        calls = max(two["allreduce_calls"], 1)
        per_call = two["allreduce_bytes"] / calls
        comm = calls * ring_seconds(per_call, 64, a.bandwidth, a.latency)
        # MPI libraries switch to recursive doubling for small messages: 2 log2(N) latency
        # steps instead of the ring's 2 (N - 1).
        comm_rd = calls * (ring_seconds(per_call, 64, a.bandwidth, 0.0) + 2 * 6 * a.latency)
        proj[name] = {"bytes_per_call": per_call, "calls": calls, "comm_s": comm,
                      "efficiency": {}}
        line = []
        for compute in (1e-3, 1e-2, 1e-1):
            eff = compute / (compute + comm)
            proj[name]["efficiency"][str(compute)] = eff
            line.append(f"compute {compute * 1e3:.0f} ms/update -> {100 * eff:.1f}%")
        # The learner's own arithmetic at 3,125 arenas per rank on one GPU: a lower bound on an
        # update's compute (the simulation, on the node's CPUs, only adds to it).
        flops = learner_flops(SHAPES[name], 3125)
        gpu = flops / (a.gpu_tflops * 1e12)
        eff = gpu / (gpu + comm)
        eff_rd = gpu / (gpu + comm_rd)
        # Where communication would dominate. The bandwidth term grows with the stack's
        # parameters; the compute grows with the parameters of one network times the rows. So:
        # (a) with today's compute, the bandwidth term alone equals it at s_star parameters (a
        # stack that grows without more arithmetic per row: more networks on the same rows);
        # (b) a wider network grows both alike: the bandwidth share stays bw / gpu, and the
        # bandwidth term equals the compute when an optimiser step has fewer than rows_star rows
        # per rank; (c) the latency term is fixed per allreduce.
        bw = calls * ring_seconds(per_call, 64, a.bandwidth, 0.0)
        s_star = gpu / calls / (2 * 63 / 64 / a.bandwidth) / 4
        d, h, layers, head, learners, rollout, epochs = SHAPES[name]
        rows_step = 3125 * rollout * learners / MINIBATCHES[name]
        rows_star = rows_step * bw / gpu
        proj[name].update({"learner_gflop": flops / 1e9, "learner_s": gpu, "efficiency_at_least": eff,
                           "params_at_parity": s_star, "bandwidth_share": bw / gpu,
                           "rows_per_step_at_parity": rows_star, "rows_per_step": rows_step,
                           "comm_s_recursive_doubling": comm_rd,
                           "efficiency_at_least_recursive_doubling": eff_rd})
        print(f"{name}: {per_call / 1e6:.2f} MB x {calls:.0f} allreduces per update take "
              f"{comm * 1e3:.2f} ms on 64 ranks; efficiency {'; '.join(line)}")
        print(f"{name}: at 3,125 arenas per rank an update is {flops / 1e9:.0f} GFLOP of learner "
              f"arithmetic, {gpu * 1e3:.1f} ms at {a.gpu_tflops:.0f} TFLOP/s: efficiency at least "
              f"{100 * eff:.1f}%, {64 * 3125 * 32 / (gpu + comm) / 1e6:.1f}M env steps/s for the job "
              f"at most")
        print(f"{name}: the ring's bandwidth term is {bw * 1e3:.2f} ms, {100 * bw / gpu:.0f}% of "
              f"that compute; it alone would equal it at {s_star / 1e6:.2f}M parameters with "
              f"today's arithmetic per row (today {per_call / 4 / 1e6:.3f}M); a wider network "
              f"keeps the share, which reaches 100% below {rows_star:,.0f} rows per optimiser "
              f"step per rank (today {rows_step:,.0f}); the latency term is "
              f"{2 * 63 * a.latency * 1e3:.2f} ms per allreduce whatever the size")
        print(f"{name}: with recursive doubling's latency (2 log2 64 = 12 steps) the allreduces take "
              f"{comm_rd * 1e3:.2f} ms: efficiency at least {100 * eff_rd:.1f}%")
    results["projection"] = proj
    json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=1)
    print(f"\nresults: {out}/results.json")


if __name__ == "__main__":
    main()
