"""The coin-game learning curves of scripts/shaping_figure as a dependency-free SVG: the
own-colour share of the coins picked up and the return per player against env steps, one
colour per algorithm, a thin line per seed and a thick one for the mean over seeds (each
smoothed over a few updates)."""

import json
import math
import os

COLOURS = ["#d95f02", "#7570b3", "#1b9e77", "#e7298a"]
W, H = 860, 330
PANEL_W, PANEL_H = 360, 220
LEFT, TOP = 60, 50
GAP = 70


def per_seed(metrics_path):
    """([env steps], [[own share per update] per seed], [[return per update] per seed])."""
    steps, shares, returns = [], [], []
    with open(metrics_path) as f:
        for line in f:
            m = json.loads(line)
            counters = m.get("seeds_counters_per_seed") or [m.get("counters", {})]
            rets = m.get("seeds_return_per_seed") or [m.get("return_mean")]
            steps.append(m["env_steps"])
            row_s, row_r = [], []
            for c, r in zip(counters, rets):
                own, other = c.get("coins_own", 0.0), c.get("coins_other", 0.0)
                row_s.append(own / (own + other) if own + other > 0 else None)
                row_r.append(r)
            shares.append(row_s)
            returns.append(row_r)
    seeds = min(len(r) for r in shares) if shares else 0
    return steps, [[row[k] for row in shares] for k in range(seeds)], [[row[k] for row in returns] for k in range(seeds)]


def smooth(xs, window=9):
    out = []
    for i in range(len(xs)):
        win = [x for x in xs[max(0, i - window + 1):i + 1] if x is not None]
        out.append(sum(win) / len(win) if win else None)
    return out


def mean_rows(rows):
    out = []
    for vals in zip(*rows):
        v = [x for x in vals if x is not None]
        out.append(sum(v) / len(v) if v else None)
    return out


def ticks(lo, hi, n=5):
    """Round values from lo to hi, about n of them (steps of 1, 2 or 5 x 10^k)."""
    import math
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    while first <= hi + 1e-9:
        out.append(round(first, 10))
        first += step
    return out


def panel(x0, title, xmax, ylo, yhi, series, fmt):
    """series: [(colour, steps, [seed curves], mean curve)]."""
    out = [f'<text x="{x0 + PANEL_W / 2}" y="{TOP - 12}" text-anchor="middle" font-size="14">{title}</text>',
           f'<rect x="{x0}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#444"/>']

    def px(x):
        return x0 + PANEL_W * x / xmax

    def py(y):
        y = min(max(y, ylo), yhi)
        return TOP + PANEL_H * (1 - (y - ylo) / (yhi - ylo))

    for y in ticks(ylo, yhi, 7):
        out.append(f'<line x1="{x0}" x2="{x0 + PANEL_W}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{x0 - 6}" y="{py(y) + 4:.1f}" text-anchor="end" font-size="11">{fmt(y)}</text>')
    for x in ticks(0, xmax):
        out.append(f'<text x="{px(x):.1f}" y="{TOP + PANEL_H + 16}" text-anchor="middle" font-size="11">{x / 1e6:g}M</text>')
    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{TOP + PANEL_H + 34}" text-anchor="middle" font-size="12">env steps per seed</text>')

    def path(steps, ys, width, opacity):
        pts = [f"{px(x):.1f},{py(y):.1f}" for x, y in zip(steps, ys) if y is not None]
        if len(pts) < 2:
            return ""
        return (f'<polyline fill="none" stroke="{colour}" stroke-width="{width}" '
                f'stroke-opacity="{opacity}" points="{" ".join(pts)}"/>')

    for colour, steps, seeds, mean in series:
        for s in seeds:
            out.append(path(steps, s, 1, 0.3))
        out.append(path(steps, mean, 2.5, 1))
    return out


def learning_curves_svg(runs, algos, path):
    """Writes the SVG of `algos` ([(run name, label)]) under `runs` to `path`."""
    data = []
    for (name, label), colour in zip(algos, COLOURS):
        steps, shares, returns = per_seed(os.path.join(runs, name, "metrics.jsonl"))
        shares = [smooth(s) for s in shares]
        returns = [smooth(r) for r in returns]
        data.append((label, colour, steps, shares, returns))
    xmax = max((d[2][-1] for d in data if d[2]), default=1)
    rets = [x for d in data for r in d[4] for x in r if x is not None]
    rlo, rhi = (min(rets + [0.0]), max(rets + [1.0]))
    rlo, rhi = (math.floor(rlo), math.ceil(rhi))
    body = panel(LEFT, "own-colour share of the coins picked up (training)", xmax, 0.4, 1.0,
                 [(c, st, sh, mean_rows(sh)) for _, c, st, sh, _ in data], lambda y: f"{y:.1f}")
    body += panel(LEFT + PANEL_W + GAP, "return per player per episode (training)", xmax, rlo, rhi,
                  [(c, st, r, mean_rows(r)) for _, c, st, _, r in data], lambda y: f"{y:.0f}")
    for k, (label, colour, *_rest) in enumerate(data):
        x = LEFT + 170 * k
        body.append(f'<line x1="{x}" x2="{x + 24}" y1="{H - 14}" y2="{H - 14}" stroke="{colour}" stroke-width="3"/>')
        body.append(f'<text x="{x + 30}" y="{H - 10}" font-size="12">{label}</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'font-family="DejaVu Sans, sans-serif">\n<rect width="{W}" height="{H}" fill="white"/>\n'
           + "\n".join(b for b in body if b) + "\n</svg>\n")
    with open(path, "w") as f:
        f.write(svg)
