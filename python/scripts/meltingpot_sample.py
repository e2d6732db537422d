"""Reference samples of Melting Pot's commons_harvest__open under uniformly random actions.

Writes python/tests/data/meltingpot_harvest.json: per-episode statistics of dm-meltingpot
2.4.1 (dmlab2d 1.0.2) with every one of the 7 players acting uniformly at random over the 8
actions, episodes of EPISODE_STEPS steps (the config's maxEpisodeLengthFrames lowered to it;
gridarena runs the same length). The fidelity tests (tests/harvest_fidelity.rs) compare
gridarena's same statistics against it.

Statistics per episode: apples eaten (the sum of all rewards: eating is the only reward),
zaps landed (Melting Pot's `zap` events), and apples standing every SAMPLE_EVERY steps,
counted in the WORLD.RGB frame: an apple cell holds an apple when its 8x8 sprite shows the
apple's red (214, 88, 88). Two render-only overrides make that count exact up to occlusion:
the zapping beam is drawn fully transparent, and an apple under an avatar is hidden (the
tests count only apples no avatar stands on, the same way).

Offline install (no network beyond PyPI): dm-meltingpot's sdist downloads ~1 GB of bot
assets while it builds (setup.py's BuildPy fetches meltingpot-assets-2.3.0.tar.gz). The
substrates need none of them, so this script puts an empty stand-in tarball where setup.py
looks for a cached copy (the temp directory), installs the sdist with --no-deps, and
installs the runtime dependencies the substrates import (not tensorflow, which only the
bots use; `tensorflow` is stubbed in sys.modules before meltingpot is imported).

Run: python3.11 python/scripts/meltingpot_sample.py [--episodes N]
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv-meltingpot")
OUT = os.path.join(HERE, "..", "tests", "data")
PINS = [
    "dmlab2d==1.0.2",
    "absl-py==2.5.1",
    "chex==0.1.92",
    "jax==0.10.2",
    "jaxlib==0.10.2",
    "dm-env==1.6",
    "dm-tree==0.1.10",
    "immutabledict==4.3.1",
    "ml_collections==1.1.0",
    "numpy==2.4.6",
    "reactivex==6.1.1",
]
EPISODE_STEPS = 1000
SAMPLE_EVERY = 100
PLAYERS = 7


def ensure_venv():
    """Creates the venv and installs the pinned reference once; re-executes inside it."""
    py = os.path.join(VENV, "bin", "python")
    if os.path.abspath(sys.prefix) == os.path.abspath(VENV):
        return
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
        pip = [py, "-m", "pip", "install", "-q"]
        stand_in = os.path.join(tempfile.gettempdir(), "meltingpot-assets-2.3.0.tar.gz")
        if not os.path.exists(stand_in):
            with tempfile.TemporaryDirectory() as d:
                os.makedirs(os.path.join(d, "assets"))
                with open(os.path.join(d, "assets", "README"), "w") as f:
                    f.write("stand-in: the substrates need no bot assets\n")
                with tarfile.open(stand_in, "w:gz") as t:
                    t.add(os.path.join(d, "assets"), arcname="assets")
        subprocess.check_call(pip + ["--no-deps", "--no-binary", "dm-meltingpot",
                                     "dm-meltingpot==2.4.1"])
        subprocess.check_call(pip + PINS)
    os.execv(py, [py] + sys.argv)


def harvest_env(seed):
    from unittest import mock
    sys.modules.setdefault("tensorflow", mock.MagicMock())
    from meltingpot import substrate
    from meltingpot.utils.substrates import substrate as substrate_lib

    config = substrate.get_config("commons_harvest__open")
    roles = config.default_player_roles
    settings = config.lab2d_settings_builder(roles=roles, config=config)
    settings["maxEpisodeLengthFrames"] = EPISODE_STEPS
    settings["env_seed"] = seed
    for obj in settings["simulation"]["gameObjects"]:
        for comp in obj["components"]:
            if comp["component"] == "Zapper":
                comp["kwargs"]["beamColor"] = (252, 252, 106, 0)
    env = substrate_lib.build_substrate(
        lab2d_settings=settings,
        individual_observations=config.individual_observation_names,
        global_observations=config.global_observation_names,
        action_table=config.action_set,
    )
    from meltingpot.configs.substrates import commons_harvest__open as cfg
    rows = cfg.ASCII_MAP.strip("\n").split("\n")
    apples = [(y, x) for y, r in enumerate(rows) for x, c in enumerate(r) if c == "A"]
    return env, apples


def apples_visible(world, apples):
    import numpy as np
    red = np.all(world == np.array([214, 88, 88], dtype=world.dtype), axis=-1)
    return int(sum(red[8 * y:8 * y + 8, 8 * x:8 * x + 8].sum() >= 4 for y, x in apples))


def sample_harvest(episodes, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for e in range(episodes):
        env, apples = harvest_env(seed * 1000 + e)
        ts = env.reset()
        eaten, zaps, standing, steps = 0.0, 0, [], 0
        while not ts.last():
            ts = env.step(rng.integers(0, 8, PLAYERS))
            steps += 1
            eaten += float(sum(ts.reward))
            zaps += sum(1 for name, _ in env.events() if name == "zap")
            if steps % SAMPLE_EVERY == 0:
                standing.append(apples_visible(ts.observation[0]["WORLD.RGB"], apples))
        env.close()
        out.append({"steps": steps, "apples_eaten": eaten, "zaps_landed": zaps,
                    "apples_visible": standing})
        print(f"episode {e}: {out[-1]}", flush=True)
    return out


def main():
    ensure_venv()
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    eps = sample_harvest(args.episodes, args.seed)
    doc = {
        "source": "dm-meltingpot 2.4.1 (dmlab2d 1.0.2), commons_harvest__open, 7 players, "
                  "uniformly random actions",
        "episode_steps": EPISODE_STEPS,
        "sample_every": SAMPLE_EVERY,
        "episodes": eps,
    }
    with open(os.path.join(OUT, "meltingpot_harvest.json"), "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
