"""Reference samples of Melting Pot's commons_harvest__open and clean_up under random actions.

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

clean_up (python/tests/data/meltingpot_cleanup.json, tests/cleanup_fidelity.rs): the same with
9 actions, in two variants: the config's map, and the map with its river clean at the start
(every `F` read as `H`), where apples grow until the pollution passes the depletion threshold.
Per episode: apples eaten (`edible_consumed` events), zaps landed (`zap`), cells cleaned
(`player_cleaned`), and every SAMPLE_EVERY steps the apples standing and the polluted cells,
counted in WORLD.RGB after render-only overrides: apples and dirt drawn as solid squares of
colours found nowhere else, avatars drawn fully transparent (so nothing hides an apple or a
dirt cell), the zapping beam transparent. The cleaning beam's colour is fixed in its Lua
component, so on the sampled steps every player takes NOOP (no beam is drawn); the Rust test
plays NOOP on the same steps.

Run: python3.11 python/scripts/meltingpot_sample.py [--episodes N] [--substrate harvest|cleanup]
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


CLEANUP_ACTIONS = 9
APPLE_RGB = (255, 0, 255)
DIRT_RGB = (0, 255, 255)
SOLID = "\n" + "\n".join(["********"] * 8) + "\n"


def cleanup_env(seed, clean_river):
    from unittest import mock
    sys.modules.setdefault("tensorflow", mock.MagicMock())
    from meltingpot import substrate
    from meltingpot.utils.substrates import substrate as substrate_lib

    config = substrate.get_config("clean_up")
    roles = config.default_player_roles
    settings = config.lab2d_settings_builder(roles=roles, config=config)
    settings["maxEpisodeLengthFrames"] = EPISODE_STEPS
    settings["env_seed"] = seed
    sim = settings["simulation"]
    if clean_river:
        sim["map"] = sim["map"].replace("F", "H")
    solid = {"potentialApple": APPLE_RGB, "DirtContainer": DIRT_RGB}
    objects = list(sim["gameObjects"]) + list(sim["prefabs"].values())
    for obj in objects:
        for comp in obj["components"]:
            kw = comp.get("kwargs", {})
            if comp["component"] == "Zapper":
                kw["beamColor"] = (252, 252, 106, 0)
            if comp["component"] != "Appearance":
                continue
            if obj["name"] in solid:
                n = len(kw["spriteNames"])
                kw.pop("spriteRGBColors", None)
                kw["renderMode"] = "ascii_shape"
                kw["spriteShapes"] = [SOLID] * n
                kw["palettes"] = [{"*": solid[obj["name"]] + (255,)}] * n
                kw["noRotates"] = [True] * n
            elif obj["name"].startswith("avatar"):
                kw["palettes"] = [{k: (0, 0, 0, 0) for k in p} for p in kw["palettes"]]
    env = substrate_lib.build_substrate(
        lab2d_settings=settings,
        individual_observations=config.individual_observation_names,
        global_observations=config.global_observation_names,
        action_table=config.action_set,
    )
    return env


def solid_cells(world, rgb):
    import numpy as np
    hit = np.all(world[..., :3] == np.array(rgb, dtype=world.dtype), axis=-1)
    h, w = hit.shape[0] // 8, hit.shape[1] // 8
    per_cell = hit[:8 * h, :8 * w].reshape(h, 8, w, 8).sum(axis=(1, 3))
    return int((per_cell >= 32).sum())


def sample_cleanup(episodes, seed, clean_river):
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for e in range(episodes):
        env = cleanup_env(seed * 1000 + e, clean_river)
        ts = env.reset()
        stats = {"apples_eaten": 0, "zaps_landed": 0, "cells_cleaned": 0}
        events = {"edible_consumed": "apples_eaten", "zap": "zaps_landed",
                  "player_cleaned": "cells_cleaned"}
        apples, dirt, steps = [], [], 0
        while not ts.last():
            steps += 1
            sample = steps % SAMPLE_EVERY == 0
            acts = np.zeros(PLAYERS, int) if sample else rng.integers(0, CLEANUP_ACTIONS, PLAYERS)
            ts = env.step(acts)
            for name, _ in env.events():
                if name in events:
                    stats[events[name]] += 1
            if sample:
                world = ts.observation[0]["WORLD.RGB"]
                apples.append(solid_cells(world, APPLE_RGB))
                dirt.append(solid_cells(world, DIRT_RGB))
        env.close()
        out.append(dict(steps=steps, **stats, apples_standing=apples, dirt_cells=dirt))
        print(f"clean_up (clean river {clean_river}) episode {e}: {out[-1]}", flush=True)
    return out


def main():
    ensure_venv()
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--substrate", choices=["harvest", "cleanup"], default="harvest")
    args = ap.parse_args()
    if args.substrate == "cleanup":
        doc = {
            "source": "dm-meltingpot 2.4.1 (dmlab2d 1.0.2), clean_up, 7 players, uniformly "
                      "random actions over 9, all NOOP on the sampled steps",
            "episode_steps": EPISODE_STEPS,
            "sample_every": SAMPLE_EVERY,
            "variants": {
                "config_map": sample_cleanup(args.episodes, args.seed, False),
                "clean_river": sample_cleanup(args.episodes, args.seed + 1, True),
            },
        }
        with open(os.path.join(OUT, "meltingpot_cleanup.json"), "w") as f:
            json.dump(doc, f, indent=None, separators=(",", ":"))
            f.write("\n")
        return
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
