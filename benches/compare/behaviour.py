#!/usr/bin/env python3
"""Behaviour of two gridarena binaries (before and after a change) on a matrix of small runs.

Every run of the matrix is trained by both binaries into fresh directories; the script then
compares, run by run:
- metrics.jsonl line by line, wall-clock fields aside (sps, seconds, allreduce_seconds);
- every checkpoint's tensors by name (dtype, shape and bytes; the safetensors metadata is
  compared as numbers, so a change of its layout alone is no difference);
- every checkpoint's state.json as JSON.
It prints one line per run, `same` or the first differences, and exits 1 when any run differs.

Known changes of form are compared in a common form and reported as explained, not as
differences (`same (explained: ...)`):
- replicas: a run of several replicas checkpoints each replica's single-run state (`state.json`
  `replicas[r]`, its extra tensors under `replica.<r>.`) where earlier versions stacked them
  (one `target` tensor, PQN's arenas and streams in one list, the opponent models' shuffle
  streams in one `models_state`): both are cut per replica and compared replica by replica;
- loss: such a run reports the mean of its replicas' mean losses, where earlier versions
  averaged each minibatch over the replicas first; equal up to float rounding (relative 1e-5).

The matrix: PQN, IQL and PR2-IQL; one seed, --seeds 3 and a --sweep; MLP and GRU networks;
opponent models; with --mpi (binaries built with `--features mpi`, mpirun on PATH) the PQN,
IQL and PR2-IQL runs under `mpirun -np 2` too.

Usage: benches/compare/behaviour.py OLD_BINARY NEW_BINARY [--mpi] [--keep DIR] [--only NAME]
Build the old binary from a worktree of the old commit:
  git worktree add /tmp/old <commit> && (cd /tmp/old && cargo build --release)
"""

import argparse
import json
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WALL_CLOCK = {"sps", "seconds", "allreduce_seconds"}

# Small runs, each a few seconds in a release build: (name, arguments after `train`).
TINY = ["--device", "cpu", "--set", "arenas=8", "--set", "hidden=16", "--set", "layers=1"]
PURSUIT_3 = ["--scenario", "assets/scenarios/pursuit_3.ron"]
IQL = ["--algo", "iql", "--set", "min_replay=64", "--set", "batch_size=32",
       "--set", "replay_capacity=512"]
# The flat form of the shipped config: both an old binary and a new one read it.
PR2 = ["--config", "tests/data/flat_runs/climbing_pr2.ron", "--device", "cpu"]
MATRIX = [
    ("pqn", TINY + PURSUIT_3 + ["--steps", "2048"]),
    ("pqn-seeds", TINY + PURSUIT_3 + ["--steps", "2048", "--seeds", "3"]),
    ("pqn-sweep", TINY + PURSUIT_3 + ["--steps", "2048", "--sweep", "lr=[1e-3,3e-3]"]),
    ("pqn-gru", TINY + PURSUIT_3 + ["--steps", "2048", "--set", "network=gru"]),
    ("pqn-opponents", TINY + PURSUIT_3 + ["--steps", "2048", "--set", "opponent_models=true"]),
    ("iql", TINY + PURSUIT_3 + IQL + ["--steps", "2048"]),
    ("iql-seeds", TINY + PURSUIT_3 + IQL + ["--steps", "2048", "--seeds", "3"]),
    ("iql-sweep", TINY + PURSUIT_3 + IQL + ["--steps", "2048", "--sweep", "lr=[1e-3,3e-3]"]),
    ("iql-gru", TINY + PURSUIT_3 + IQL + ["--steps", "2048", "--set", "network=gru",
                                          "--set", "batch_size=4", "--set", "cer=1"]),
    ("iql-opponents", TINY + PURSUIT_3 + IQL + ["--steps", "2048",
                                                "--set", "opponent_models=true"]),
    ("iql-opponents-seeds", TINY + PURSUIT_3 + IQL + ["--steps", "2048", "--seeds", "2",
                                                      "--set", "opponent_models=true"]),
    ("pqn-opponents-sweep", TINY + PURSUIT_3 + ["--steps", "2048", "--sweep", "lr=[1e-3,3e-3]",
                                                "--set", "opponent_models=true"]),
    ("pr2", PR2 + ["--steps", "4096"]),
    ("pr2-seeds", PR2 + ["--steps", "4096", "--seeds", "2"]),
    ("pr2-opponents", PR2 + ["--steps", "4096", "--set", "opponent_models=true",
                             "--set", "rho=model"]),
    ("pr2-sweep", PR2 + ["--steps", "4096", "--sweep", "lr=[1e-3,3e-3]"]),
    ("pr2-gru", PR2 + ["--steps", "4096", "--set", "network=gru", "--set", "layers=1"]),
]
MPI = ["pqn", "iql", "pr2"]


def safetensors(path):
    """The tensors of a safetensors file by name ((dtype, shape, bytes)) and its metadata."""
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors = {
        name: (t["dtype"], t["shape"], body[t["data_offsets"][0]:t["data_offsets"][1]])
        for name, t in header.items()
    }
    # Whatever the layout (one JSON entry or one entry per number), the numbers it holds.
    numbers = {}
    for key, value in meta.items():
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        if isinstance(parsed, dict):
            numbers.update({k: str(v) for k, v in parsed.items()})
        else:
            numbers[key] = str(parsed)
    return tensors, numbers


def metrics(run):
    lines = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        lines.append({k: v for k, v in m.items() if k not in WALL_CLOCK})
    return lines


def per_replica_tensors(tensors):
    """`replica.<r>.NAME` tensors of float32 joined into one `NAME` (replica order), the form
    earlier versions wrote; True when any were joined."""
    parts = {}
    for name in list(tensors):
        head, _, rest = name.partition(".")
        r, _, base = rest.partition(".")
        if head == "replica" and r.isdigit() and tensors[name][0] == "F32":
            parts.setdefault(base, {})[int(r)] = tensors.pop(name)
    for base, by_r in parts.items():
        if base in tensors:
            continue
        joined = b"".join(by_r[r][2] for r in sorted(by_r))
        tensors[base] = ("F32", [len(joined) // 4], joined)
    return bool(parts)


def flat_shape(tensors):
    """Tensors with their shapes flattened (a joined tensor has lost its stacked shape)."""
    return {n: (d, [len(data) // 4], data) for n, (d, _, data) in tensors.items()}


def models_of_replica(models, r):
    """Replica r's part of an opponent-model state: earlier versions kept every replica's models
    in one stack, replica 0's shuffle stream in `shuffle` and the others' in
    `replica_shuffles`."""
    if not models:
        return models
    streams = [models.get("shuffle")] + models.get("replica_shuffles", [])
    one = {k: v for k, v in models.items() if k != "replica_shuffles"}
    if len(streams) > 1:
        one["shuffle"] = streams[r]
    return one


def replica_states(state):
    """A checkpoint's state cut per replica: (list of per-replica states, per-network Adam step
    counts or None), or None for a single run's state."""
    if "replicas" in state:
        steps = state.get("net_steps") or None
        if steps and isinstance(steps[0], list):
            steps = [s for each in steps for s in each]
        reps = state["replicas"]
        shared = state.get("models_state")
        reps = [dict(rep, models_state=rep.get("models_state") or models_of_replica(shared, r))
                for r, rep in enumerate(reps)]
        return reps, steps
    if isinstance(state.get("shuffle"), list) and len(state["shuffle"]) > 1:
        # PQN's stacked form: streams and arenas of every replica in one list each.
        n = len(state["shuffle"])
        per = len(state["explore"]) // n
        reps = []
        for r in range(n):
            one = {k: v for k, v in state.items() if k not in ("explore", "shuffle", "batches")}
            one["explore"] = state["explore"][r * per:(r + 1) * per]
            one["shuffle"] = [state["shuffle"][r]]
            one["batches"] = [state["batches"][r]]
            one["models_state"] = models_of_replica(state.get("models_state"), r)
            reps.append(one)
        return reps, None
    return None


def same_states(sa, sb):
    """Whether two state.json agree, directly or cut per replica (then explained)."""
    if sa == sb:
        return True, False
    ra, rb = replica_states(sa), replica_states(sb)
    if ra is None or rb is None:
        return False, False
    (reps_a, steps_a), (reps_b, steps_b) = ra, rb
    strip = lambda r: {k: v for k, v in r.items() if v is not None}
    same = [strip(x) for x in reps_a] == [strip(y) for y in reps_b]
    if steps_a is not None and steps_b is not None:
        same = same and steps_a == steps_b
    return same, same


def close_loss(x, y):
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
        return False
    return abs(x - y) <= 1e-5 * max(abs(x), abs(y), 1e-12)


def differences(a, b):
    """The first few differences between runs a and b (empty when they agree) and the known
    changes of form that explained the rest."""
    out, explained = [], set()
    ma, mb = metrics(a), metrics(b)
    if len(ma) != len(mb):
        out.append(f"metrics: {len(ma)} vs {len(mb)} lines")
    for k, (x, y) in enumerate(zip(ma, mb)):
        keys = sorted(set(x) | set(y))
        bad = [key for key in keys if x.get(key) != y.get(key)]
        several = "seeds_return_per_seed" in x
        if bad == ["loss"] and several and close_loss(x["loss"], y["loss"]):
            explained.add("loss as the replicas' mean")
            continue
        if bad:
            out.append(f"metrics line {k + 1}: {', '.join(bad[:6])}")
            break
    ca = sorted(p.name for p in (a / "checkpoints").iterdir() if p.name.startswith("update_"))
    cb = sorted(p.name for p in (b / "checkpoints").iterdir() if p.name.startswith("update_"))
    if ca != cb:
        out.append(f"checkpoints: {ca} vs {cb}")
    for name in sorted(set(ca) & set(cb)):
        for sub in sorted((a / "checkpoints" / name).rglob("params.safetensors")):
            rel = sub.relative_to(a / "checkpoints")
            other = b / "checkpoints" / rel
            if not other.exists():
                out.append(f"{rel}: missing in the new run")
                continue
            (ta, meta_a), (tb, meta_b) = safetensors(sub), safetensors(other)
            if meta_a != meta_b:
                out.append(f"{rel}: metadata {meta_a} vs {meta_b}")
            if ta != tb and (per_replica_tensors(ta) | per_replica_tensors(tb)):
                if flat_shape(ta) == flat_shape(tb):
                    explained.add("tensors per replica")
                    ta, tb = tb, tb
            for t in sorted(set(ta) | set(tb)):
                if ta.get(t) != tb.get(t):
                    out.append(f"{rel}: tensor {t}")
            sa, sb = sub.parent / "state.json", other.parent / "state.json"
            same, cut = same_states(json.loads(sa.read_text()), json.loads(sb.read_text()))
            if not same:
                out.append(f"{rel.parent}/state.json")
            elif cut:
                explained.add("state per replica")
        if len(out) > 8:
            break
    return out, sorted(explained)


def train(binary, args, out, mpi):
    cmd = [str(binary), "train", *args, "--out", str(out)]
    if mpi:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", *cmd]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--mpi", action="store_true", help="also the MPI runs (mpirun -np 2)")
    p.add_argument("--keep", type=Path, help="keep the runs in this directory")
    p.add_argument("--only", help="only the runs whose name contains this")
    args = p.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="gridarena-behaviour-"))
    work.mkdir(parents=True, exist_ok=True)
    runs = [(name, a, False) for name, a in MATRIX]
    if args.mpi:
        runs += [(f"{name}-mpi2", a, True) for name, a in MATRIX if name in MPI]
    failed = ran = 0
    for name, run_args, mpi in runs:
        if args.only and args.only not in name:
            continue
        ran += 1
        dirs = [work / f"{name}-{side}" for side in ("old", "new")]
        for binary, d in zip((args.old, args.new), dirs):
            shutil.rmtree(d, ignore_errors=True)
            train(binary.resolve(), run_args, d, mpi)
        diff, explained = differences(*dirs)
        failed += bool(diff)
        if diff:
            verdict = "DIFFERS: " + "; ".join(diff)
        else:
            verdict = "same" + (f" (explained: {', '.join(explained)})" if explained else "")
        print(f"{name:18} {verdict}", flush=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{ran - failed} same, {failed} differ")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
