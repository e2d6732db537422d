"""The tables scripts/figures writes: benchmarks and learning results as markdown, and which
benchmark rows the README shows (the record under benches/figures/ keeps every row)."""

QUICK_NOTE = "(quick mode: not for quoting)"

# The README shows one `bench env` row per substrate: these scenarios where a substrate ships
# several (the configurations the field reports), else the substrate's first scenario by name.
README_SCENARIOS = ("lbf_8x8_2p_2f", "overcooked_cramped_room", "prisoners_dilemma", "pursuit",
                    "gift_refinements", "chemistry_three_cycles")


def runs_text(xs):
    return " / ".join(f"{x:,.0f}" for x in xs)


def is_env_row(row):
    """A `bench env` row: its figures are per-run dicts naming the scenario and substrate."""
    return bool(row[5]) and isinstance(row[5][0], dict)


def readme_rows(rows):
    """Every row but the `bench env` ones beyond one per substrate (README_SCENARIOS first)."""
    chosen = {}
    for row in filter(is_env_row, rows):
        sub, name = row[5][0]["substrate"], row[5][0]["scenario"]
        if sub not in chosen or (name in README_SCENARIOS
                                 and chosen[sub][5][0]["scenario"] not in README_SCENARIOS):
            chosen[sub] = row
    kept = [r for r in rows if not is_env_row(r) or chosen[r[5][0]["substrate"]] is r]
    if len(kept) < len(rows):  # after the last `bench env` row shown
        at = max(i for i, r in enumerate(kept) if is_env_row(r)) + 1
        kept.insert(at, (f"`bench env`, the other {len(rows) - len(kept)} shipped scenarios",
                         "in the record linked below", "", "", "", None))
    return kept


def bench_table(rows, runs, quick):
    head = (f"Benchmarks, medians of {runs} run{'s' if runs > 1 else ''} (every run's figure in "
            f"the third column){' ' + QUICK_NOTE if quick else ''}:\n\n"
            "| measurement | gridarena (median) | runs; other figures | peer (median, runs) | "
            "ratio gridarena / peer |\n|---|---|---|---|---|")
    lines = [head]
    for what, fig, extra, peer, ratio, f in rows:
        if f and isinstance(f[0], dict):  # bench env: every run's agent-steps/s, then the rest
            extra = runs_text([x["agent"] for x in f]) + "; " + extra
        lines.append(f"| {what} | {fig} | {extra} | {peer} | {ratio} |")
    return "\n".join(lines)


def learning_table(rows, episodes, quick, algo="PQN"):
    head = ("Each run trained with `gridarena train [ARGS] --out RUN --set device=cpu`, then "
            f"evaluated with `gridarena eval --run RUN --episodes {episodes} --device cpu`. "
            "Trained vs random vs the best scripted baseline: mean return per agent per episode ± 95% CI, then the substrate's "
            f"main counter per episode{' ' + QUICK_NOTE if quick else ''}:\n\n"
            f"| substrate (run, steps) | trained {algo} | random | best scripted baseline | "
            "baselines tried |\n|---|---|---|---|---|")
    return "\n".join([head] + [f"| {' | '.join(r)} |" for r in rows])


