"""Driver of benches/peers/loqa_coin.sh: wall time to cooperation on the 3x3 coin game for
gridarena's LOQA and Advantage Alignment and for the LOQA authors' code, one after the other on
this machine. See the shell script for what is run and what "cooperation" means."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WINDOW = 3
# gridarena's sides: (label, run configuration).
GRIDARENA = [("LOQA", "assets/runs/loqa_coin.ron"),
             ("Advantage Alignment", "assets/runs/advantage_alignment_coin.ron")]
# The 3x3 coin-game flags of the LOQA README ("Coin Game" section).
LOQA_BATCH, LOQA_EPISODE = 512, 50
LOQA_FLAGS = [
    "hp=loqa_iclr", "wandb.state=disabled", "hp.game.width=3", "hp.game.height=3",
    f"hp.batch_size={LOQA_BATCH}", "hp.save_every=1000000", "hp.actor.train.lr_loss_actor=0.001",
    "hp.qvalue.train.lr_loss_qvalue=0.01", "hp.actor.train.entropy_beta=0.1",
    "hp.actor.layers_before_gru=2", "hp.actor.hidden_size=128", "hp.agent_replay_buffer.mode=enabled",
    "hp.agent_replay_buffer.capacity=10000", "hp.agent_replay_buffer.update_freq=10",
    "hp.just_self_play=True",
]
ADV = re.compile(r"'adversarial_pickup_div_all_pickup': Array\(\[\s*([0-9.eE+-]+)\s*,\s*([0-9.eE+-]+)\s*\]")


def gridarena_side(binary, config, seed, cap, threshold, tmp):
    out = os.path.join(tmp, os.path.splitext(os.path.basename(config))[0])
    cmd = [binary, "train", "--config", config, "--set", "device=cpu",
           "--seed", str(seed), "--out", out]
    print("$", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    metrics = os.path.join(out, "metrics.jsonl")
    seen, shares = 0, []
    try:
        while True:
            done = proc.poll() is not None
            if os.path.exists(metrics):
                lines = open(metrics).read().splitlines()
                for line in lines[seen:]:
                    try:
                        m = json.loads(line)
                    except json.JSONDecodeError:
                        break  # a line being written: read it next time
                    seen += 1
                    shares.append(m.get("own_coin_proportion"))
                    last = [s for s in shares[-WINDOW:] if s is not None]
                    if len(last) == WINDOW and min(last) >= threshold:
                        wall = time.perf_counter() - t0
                        return dict(reached=True, wall=wall, updates=m["update"], env_steps=m["env_steps"],
                                    share=min(last))
            if done:
                err = proc.stderr.read()
                if proc.returncode != 0:
                    sys.exit(f"gridarena failed ({proc.returncode}):\n{err}")
                return dict(reached=False, wall=time.perf_counter() - t0, updates=seen)
            if time.perf_counter() - t0 > cap:
                return dict(reached=False, wall=cap, updates=seen)
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def loqa_side(python, loqa, seed, cap, threshold, eval_every, tmp):
    cmd = [python, "-u", "coin_train.py", *LOQA_FLAGS, f"hp.seed={seed}", f"hp.eval_every={eval_every}",
           f"hp.save_dir={os.path.join(tmp, 'loqa')}"]
    print("$ (in", loqa + ")", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=loqa, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "JAX_PLATFORMS": "cpu", "WANDB_MODE": "disabled"})
    iteration, first, owns, tail = None, None, [], []
    try:
        for line in proc.stdout:
            tail = (tail + [line])[-20:]
            now = time.perf_counter() - t0
            if line.startswith("iteration "):
                iteration = int(line.split()[1])
                first = first if first is not None else now
            m = ADV.search(line)
            if m and iteration is not None:
                owns.append(min(1 - float(m.group(1)), 1 - float(m.group(2))))
                print(f"  LOQA iteration {iteration}: own-colour share {owns[-1]:.3f} at {now:.0f} s", flush=True)
                if len(owns) >= WINDOW and min(owns[-WINDOW:]) >= threshold:
                    return dict(reached=True, wall=now, compile=first, iterations=iteration + 1,
                                env_steps=(iteration + 1) * LOQA_BATCH * LOQA_EPISODE, share=min(owns[-WINDOW:]))
            if now > cap:
                return dict(reached=False, wall=cap, compile=first, iterations=(iteration or 0) + 1,
                            env_steps=((iteration or 0) + 1) * LOQA_BATCH * LOQA_EPISODE,
                            share=owns[-1] if owns else None)
        proc.wait()
        sys.exit(f"LOQA's coin_train.py ended ({proc.returncode}):\n{''.join(tail)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--loqa", required=True)
    ap.add_argument("--gridarena", required=True)
    ap.add_argument("--cap", type=float, default=7200)
    ap.add_argument("--threshold", type=float, default=0.9)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    binary = args.gridarena if os.path.isabs(args.gridarena) else os.path.join(ROOT, args.gridarena)
    tmp = tempfile.mkdtemp(prefix="gridarena-loqa-")
    try:
        ours = [(label, gridarena_side(binary, config, args.seed, args.cap, args.threshold, tmp))
                for label, config in GRIDARENA]
        lq = loqa_side(sys.executable, args.loqa, args.seed, args.cap, args.threshold, args.eval_every, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nwall time to an own-colour share >= {args.threshold} over {WINDOW} measurements, seed {args.seed}:")
    for label, ga in ours:
        if ga["reached"]:
            print(f"  gridarena {label}: {ga['wall']:.1f} s ({ga['updates']} updates, {ga['env_steps']:,} env steps)")
        else:
            print(f"  gridarena {label}: not within {ga['wall']:.0f} s ({ga['updates']} updates)")
    compile_s = f"{lq['compile']:.0f} s of it before the first iteration" if lq.get("compile") is not None else "no iteration"
    if lq["reached"]:
        print(f"  LOQA (authors' code): {lq['wall']:.1f} s ({compile_s}; {lq['iterations']} iterations, "
              f"{lq['env_steps']:,} env steps)")
        for label, ga in ours:
            if ga["reached"]:
                print(f"  ratio authors' LOQA / gridarena {label}: {lq['wall'] / ga['wall']:.1f}x")
    else:
        print(f"  LOQA (authors' code): not within {lq['wall']:.0f} s ({compile_s}; {lq['iterations']} iterations, "
              f"{lq['env_steps']:,} env steps; last share {lq['share']})")


if __name__ == "__main__":
    main()
