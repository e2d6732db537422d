# Sourced by the scripts that time several implementations on one core (jumanji_lbf.sh,
# meltingpot.sh, socialjax.sh, benches/ceilings/meltingpot_step.sh):
#   median X...             the median of the numbers
#   figure PATTERN CMD...   runs CMD under `taskset -c 0`, echoes its output (less warnings) to
#                           stderr, prints the number after PATTERN on its last such line; on a
#                           failure shows the output and exits
#   ratio A B               A / B, one decimal below 10, none above
#   machine_line [EXTRA]    the machine's cores, CPU model and load, then EXTRA
#   check_args BIN NAMES X...  exits 2 with a message unless BIN is an executable gridarena and
#                           every X a positive integer (NAMES words them in the message)
#   steps_per_repeat ENVS   `bench env --steps` for ENVS arenas so that a repeat takes about a
#                           million env steps whatever the batch (at least 100)
#   meltingpot_python       prints the path of dm-meltingpot's Python (run from the repository
#                           root), building its virtualenv on first use
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
figure() {
    local pattern="$1" out
    shift
    out="$(taskset -c 0 "$@" 2>&1)" || {
        echo "$out" >&2
        echo "failed: $*" >&2
        exit 1
    }
    echo "$out" | grep -v -i 'warning' | sed 's/^/    /' >&2
    echo "$out" | sed -n "s/^$pattern *\([0-9.]*\).*/\1/p" | tail -1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {r = a / b; printf (r < 10 ? "%.1fx" : "%.0fx"), r}'; }
machine_line() {
    echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); load average $(cut -d' ' -f1-3 /proc/loadavg)${1:+; $1}"
}
check_args() {
    local bin="$1" names="$2" v
    shift 2
    if [[ ! -x "$bin" ]]; then
        echo "no gridarena binary at $bin (build it with cargo build --release, or pass its path)" >&2
        exit 2
    fi
    for v in "$@"; do
        if ! [[ "$v" =~ ^[1-9][0-9]*$ ]]; then
            echo "$names must be positive integers" >&2
            exit 2
        fi
    done
}
meltingpot_python() {
    local py=python/scripts/.venv-meltingpot/bin/python
    if [[ ! -x "$py" ]]; then
        echo "== building Melting Pot's venv (once)" >&2
        "${PYTHON:-python3.11}" python/scripts/meltingpot_sample.py --help >/dev/null
    fi
    echo "$py"
}
steps_per_repeat() {
    local steps=$((1024000 / $1))
    echo $((steps >= 100 ? steps : 100))
}
