# Sourced by .ci/run: `step NAME BUDGET_S CMD [ARG...]` runs CMD as one step of CI and times it.
#
# Each step has a budget in wall seconds, its share of the run's budget (CI_BUDGET_S, 45
# minutes by default) on this 2-core machine at a quiet load; BENCHMARKS.md ("CI time") has the
# table of what each step took. After every step one line says its wall and CPU (user + sys)
# seconds against its budget, and the table of every step is printed at the end, when a step
# fails too. A step past its budget in wall time is flagged at once (on a loaded machine wall
# time stretches, so this warns). A step whose CPU time exceeds its budget on every core
# (budget x cores) has grown past its share whatever the load: that is flagged louder, and
# fails the run when CI_BUDGET_STRICT=1.
#
# A step of several commands is a shell function: `python_package() { ...; }` then
# `step python 300 python_package`.

ci_budget_s=${CI_BUDGET_S:-2700}
ci_cores=$(nproc)
ci_times=$(mktemp /tmp/resumable-ci-times.XXXXXX)
ci_rows=()
ci_over=()
ci_step_name=

# Sets ci_cpu_ms to the user + sys CPU milliseconds of every child this shell has waited for.
# `times` runs in this shell (a command substitution would report a subshell's children).
ci_cpu_now() {
    times >"$ci_times"
    local _shell_user _shell_sys user sys
    { read -r _shell_user _shell_sys; read -r user sys; } <"$ci_times"
    ci_cpu_ms=$(($(ci_ms "$user") + $(ci_ms "$sys")))
}

# `1m2.345s` (the format of `times`) in milliseconds.
ci_ms() {
    local t=${1%s} minutes seconds
    minutes=${t%%m*}
    seconds=${t#*m}
    echo $((10#$minutes * 60000 + 10#${seconds%.*} * 1000 + 10#${seconds#*.}))
}

step() {
    local name=$1 budget_s=$2
    shift 2
    echo "== step $name (budget $budget_s s): $*" >&2
    ci_step_name=$name ci_step_budget_s=$budget_s ci_step_start_s=$SECONDS
    ci_cpu_now
    ci_step_cpu0_ms=$ci_cpu_ms
    "$@"
    ci_step_end ok
}

# Records the step that is running (ok, or failed when the run exits inside it).
ci_step_end() {
    local status=$1 wall_s=$((SECONDS - ci_step_start_s)) cpu_s mark=
    ci_cpu_now
    cpu_s=$(((ci_cpu_ms - ci_step_cpu0_ms + 500) / 1000))
    if ((cpu_s > ci_step_budget_s * ci_cores)); then
        mark="CPU PAST BUDGET x $ci_cores CORES"
        ci_over+=("$ci_step_name")
    elif ((wall_s > ci_step_budget_s)); then
        mark="wall past budget"
    fi
    ci_rows+=("$ci_step_name|$ci_step_budget_s|$wall_s|$cpu_s|$status|$mark")
    echo "== step $ci_step_name: $status, $wall_s s wall, $cpu_s s CPU, budget $ci_step_budget_s s${mark:+: $mark}" >&2
    if [ -n "$mark" ]; then
        echo "!! CI BUDGET: step $ci_step_name took $wall_s s wall and $cpu_s s CPU against a budget of $ci_step_budget_s s ($mark)" >&2
    fi
    ci_step_name=
}

# The table of every step; called on exit. With CI_BUDGET_STRICT=1, fails the run if a step's
# CPU time passed its budget on every core.
ci_step_table() {
    local code=$1 row name budget wall cpu status mark total_wall=0 total_cpu=0 total_budget=0
    if [ -n "$ci_step_name" ]; then
        ci_step_end failed
    fi
    rm -f "$ci_times"
    echo
    echo "| step | budget (s) | wall (s) | CPU (s) | status | |"
    echo "|---|---:|---:|---:|---|---|"
    for row in "${ci_rows[@]}"; do
        IFS='|' read -r name budget wall cpu status mark <<<"$row"
        echo "| $name | $budget | $wall | $cpu | $status | $mark |"
        total_budget=$((total_budget + budget)) total_wall=$((total_wall + wall))
        total_cpu=$((total_cpu + cpu))
    done
    echo "| total | $total_budget of $ci_budget_s | $total_wall | $total_cpu | exit $code | $(uptime | sed 's/.*load/load/') |"
    if ((total_wall > ci_budget_s)); then
        echo "!! CI BUDGET: $total_wall s in all, past the $ci_budget_s s budget" >&2
    fi
    if ((${#ci_over[@]} > 0)); then
        echo "!! CI BUDGET: past its budget on every core: ${ci_over[*]}" >&2
        if ((code == 0)) && [ "${CI_BUDGET_STRICT:-0}" = 1 ]; then
            return 1
        fi
    fi
    return 0
}

# `together NAME...` runs the shell functions NAME... at the same time and waits for all of
# them; fails if any failed. For steps that leave a core idle (a test suite that waits on a
# server, a single-threaded compile of C, a fuzzer): on two cores, two such steps side by side
# take the time of the longer. Each one's output goes to its own log, printed whole, under its
# name, once all have ended, so the two never interleave; its own wall seconds are printed with it.
# Functions that run `cargo` at once share the target directory's lock: cargo runs one build at
# a time and the other waits, so a build never races another.
together() {
    local dir name i status=0 started=$SECONDS
    local -a pids=()
    dir=$(mktemp -d /tmp/resumable-ci-together.XXXXXX)
    for name in "$@"; do
        (
            trap 'echo $((SECONDS - started)) >"$dir/$name.wall"' EXIT
            "$name"
        ) >"$dir/$name.log" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        name=${*:i+1:1}
        if wait "${pids[$i]}"; then
            echo "-- $name: ok, $(cat "$dir/$name.wall") s wall" >&2
        else
            echo "-- $name: FAILED after $(cat "$dir/$name.wall" 2>/dev/null) s wall" >&2
            status=1
        fi
        sed "s/^/[$name] /" "$dir/$name.log"
    done
    rm -rf "$dir"
    return "$status"
}
