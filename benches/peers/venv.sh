# Sourced by the peer scripts: `peers_venv VENV STAMP WHAT REQUIREMENTS [LOCK]` creates the
# virtualenv VENV and installs REQUIREMENTS into it (pinned by LOCK as constraints when given),
# once: again only when those files change (their hash is kept in VENV/STAMP). WHAT names what
# is installed in the message. Python is ${PYTHON:-python3}.
peers_venv() {
    local venv="$1" stamp="$1/$2" what="$3" req="$4" lock="${5:-}" wanted
    local -a pins=()
    [[ -n "$lock" ]] && pins=(-c "$lock")
    wanted="$(cat "$req" ${lock:+"$lock"} | sha256sum | cut -d' ' -f1)"
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$wanted" ]]; then
        echo "== installing $what into $venv (once)"
        "${PYTHON:-python3}" -m venv "$venv"
        "$venv/bin/pip" install --quiet -r "$req" "${pins[@]}"
        echo "$wanted" >"$stamp"
    fi
}
