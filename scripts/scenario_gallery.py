#!/usr/bin/env python3
"""Draws docs/scenarios.png, the README's picture of the shipped gridworld scenarios: one frame
of a random rollout of each, side by side with its name (the matrix games have no map to show).

Usage: scripts/scenario_gallery.py [GRIDARENA_BINARY] [OUT_PNG]
  GRIDARENA_BINARY  default target/release/gridarena
  OUT_PNG           default docs/scenarios.png
Needs Pillow (`pip install pillow`). The frames come from `gridarena rollout` and
`gridarena render`, so the picture is what the engine draws.
"""

import pathlib
import subprocess
import sys
import tempfile

from PIL import Image, ImageDraw, ImageFont

ROOT = pathlib.Path(__file__).resolve().parent.parent
# (scenario file stem, caption, frame to show, pixels per cell)
SCENES = [
    ("pursuit", "Pursuit (8 pursuers, 30 evaders)", 40, 16),
    ("gift_refinements", "gift_refinements (6 players)", 60, 9),
    ("chemistry_two_cycles", "chemistry (4 players)", 60, 14),
    ("coin_game", "coin game (2 players)", 3, 60),
    ("pursuit_3", "pursuit_3 (exact analysis)", 5, 30),
]
TILE = 260  # each frame is scaled to fit a TILE x TILE square
CAPTION = 26


def frame(binary, scenario, index, cell, work):
    rollout = work / f"{scenario}.ron"
    frames = work / scenario
    run = lambda *args: subprocess.run([binary, *args], check=True, capture_output=True)
    run("rollout", "--scenario", str(ROOT / "assets/scenarios" / f"{scenario}.ron"),
        "--seed", "1", "--steps", str(index + 1), "--out", str(rollout))
    run("render", str(rollout), "--out", f"{frames}/", "--cell", str(cell),
        "--frames", str(index + 1))
    return Image.open(sorted(frames.glob("*.png"))[-1]).convert("RGB")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target/release/gridarena")
    out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs/scenarios.png"
    cols = len(SCENES)
    rows = (len(SCENES) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * TILE, rows * (TILE + CAPTION)), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=15)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (scenario, caption, index, cell) in enumerate(SCENES):
            img = frame(binary, scenario, index, cell, pathlib.Path(tmp))
            scale = (TILE - 12) / max(img.width, img.height)
            img = img.resize((round(img.width * scale), round(img.height * scale)), Image.NEAREST)
            x0, y0 = (i % cols) * TILE, (i // cols) * (TILE + CAPTION)
            sheet.paste(img, (x0 + (TILE - img.width) // 2, y0 + (TILE - img.height) // 2))
            w = draw.textlength(caption, font=font)
            draw.text((x0 + (TILE - w) / 2, y0 + TILE + 2), caption, fill=(0, 0, 0), font=font)
    tmp_out = out.with_suffix(".tmp.png")
    sheet.save(tmp_out, optimize=True)
    tmp_out.replace(out)
    print(f"wrote {out} ({sheet.width}x{sheet.height})")


if __name__ == "__main__":
    main()
