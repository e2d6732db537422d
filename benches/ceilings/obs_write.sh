#!/usr/bin/env bash
# A memory-bound ceiling for writing observations on one core: glibc's memset (the fastest
# way this machine has to fill memory; it picks non-temporal stores for large buffers) over
# ARENAS back-to-back observation buffers of BYTES each, timed over REPS passes, best of 5.
# Prints env steps/s (arenas filled per second) and GB/s. Commons Harvest writes 5,943
# observation bytes per env step (7 players x 849), its benchmark steps 1024 arenas.
#
# Usage: benches/ceilings/obs_write.sh [BYTES] [ARENAS...]   (default 5943, arenas 64 1024 4096)
# Needs a C compiler (cc); runs pinned to core 0 when taskset is present.
set -euo pipefail
bytes="${1:-5943}"
shift || true
arenas=("${@:-64 1024 4096}")
[[ "$bytes" =~ ^[1-9][0-9]*$ ]] || { echo "BYTES must be a positive integer" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/fill.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    size_t per = strtoul(argv[1], 0, 10), arenas = strtoul(argv[2], 0, 10), n = per * arenas;
    size_t reps = 2000000 / arenas + 1;
    unsigned char *b = malloc(n);
    if (!b) { fprintf(stderr, "out of memory\n"); return 1; }
    memset(b, 1, n);
    double best = 0;
    for (int k = 0; k < 5; k++) {
        double t = now();
        for (size_t r = 0; r < reps; r++) { memset(b, (int)(r & 0xff), n); }
        double steps = (double)arenas * reps / (now() - t);
        if (steps > best) best = steps;
    }
    printf("%zu arenas x %zu B: %.0f env steps/s, %.1f GB/s (memset, best of 5)\n", arenas, per, best, best * per / 1e9);
    volatile unsigned char sink = b[n / 2]; /* the fills are used */
    (void)sink;
    free(b);
    return 0;
}
C
cc -O2 -o "$work/fill" "$work/fill.c"
pin=()
command -v taskset >/dev/null 2>&1 && pin=(taskset -c 0)
for a in ${arenas[@]}; do
    [[ "$a" =~ ^[1-9][0-9]*$ ]] || { echo "ARENAS must be positive integers" >&2; exit 2; }
    "${pin[@]}" "$work/fill" "$bytes" "$a"
done
