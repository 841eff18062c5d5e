#!/usr/bin/env bash
# run.sh: runs the libFuzzer targets for a while, or merges what they found.
#
#   run.sh run [TARGET...]    (make fuzz-run)
#   run.sh merge [TARGET...]  (make fuzz-merge)
#
# run: each target (default: every build/fuzz/fuzz_*) fuzzes from a fresh
# copy of its committed corpus (tests/fuzz/corpus/<name>/ copied to
# build/fuzz/run/<target>/corpus/, the committed files never written) for
# FUZZ_SECONDS (default 60), stopping earlier after FUZZ_RUNS inputs when
# set; FUZZ_JOBS targets (default 2) run at a time, one a core. libFuzzer
# stops at its first finding (a crash, a sanitizer report: the targets are
# built with -fno-sanitize-recover=all, a leak, a timeout, running out of
# memory); the target then starts again from its corpus copy for the time
# left, so every finding of the run is reported, its input saved in
# build/fuzz/findings/<target>/ (replay it with build/fuzz/replay_<target>
# or the target itself). Per target it prints the inputs run, inputs per
# second (over the wall time), coverage (cov: edges and ft: features, from
# libFuzzer's last status line), new corpus inputs, and the findings; exit
# status 1 when anything was found or a target could not run.
#
# merge: for each target, libFuzzer -merge=1 adds to tests/fuzz/corpus/<name>/
# the inputs of the last run's corpus copy that add coverage to it; the new
# files are left for review and commit.
#
# FUZZ_ARGS: more libFuzzer flags (e.g. -timeout=10 -rss_limit_mb=4096).
set -u
cd "$(dirname "$0")/../.."
mode=${1:-}
[ $# -gt 0 ] && shift
build=${FUZZ_BUILD:-build/fuzz}
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-2}
runs=${FUZZ_RUNS:-}
read -r -a extra <<< "${FUZZ_ARGS:-}"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for b in "$build"/fuzz_*; do [ -x "$b" ] && targets+=("$(basename "$b")"); done
fi
[ ${#targets[@]} -gt 0 ] || { echo "run.sh: no fuzz target in $build (make fuzz)" >&2; exit 1; }
for t in "${targets[@]}"; do
    [ -x "$build/$t" ] || { echo "run.sh: no $build/$t (make fuzz)" >&2; exit 1; }
    [ -d "tests/fuzz/corpus/${t#fuzz_}" ] || { echo "run.sh: no tests/fuzz/corpus/${t#fuzz_}" >&2; exit 1; }
done

# merge: the run's copies into the committed corpus
if [ "$mode" = merge ]; then
    status=0
    for t in "${targets[@]}"; do
        corpus=tests/fuzz/corpus/${t#fuzz_} copy=$build/run/$t/corpus
        if [ ! -d "$copy" ]; then echo "$t: no run to merge ($copy; make fuzz-run first)"; continue; fi
        before=$(ls "$corpus" | wc -l)
        if ! "$build/$t" -merge=1 "${extra[@]}" "$corpus" "$copy" > "$build/run/$t/merge.log" 2>&1; then
            echo "$t: merge failed (see $build/run/$t/merge.log)"; status=1; continue
        fi
        after=$(ls "$corpus" | wc -l)
        echo "$t: $((after - before)) inputs added to $corpus ($after in all)"
    done
    exit $status
fi
[ "$mode" = run ] || { echo "usage: run.sh run|merge [TARGET...]" >&2; exit 1; }

# one target: runs until its time is spent (or FUZZ_RUNS inputs), starting
# again after each finding; writes its summary to $dir/summary
fuzz_one() {
    local t=$1 dir=$build/run/$1 found=$build/findings/$1
    local corpus=tests/fuzz/corpus/${1#fuzz_} inputs=0 new=0 cov=- ft=- starts=0 log n left
    rm -rf "$dir" && mkdir -p "$dir/corpus" "$found"
    cp -p "$corpus"/* "$dir/corpus/"
    : > "$dir/findings"
    local t0=$SECONDS
    while :; do
        left=$((seconds - (SECONDS - t0)))
        [ "$left" -gt 0 ] || break
        [ -n "$runs" ] && [ "$inputs" -ge "$runs" ] && break
        starts=$((starts + 1)); log=$dir/log.$starts
        local limit=()
        [ -n "$runs" ] && limit=(-runs=$((runs - inputs)))
        "$build/$t" -max_total_time="$left" "${limit[@]}" -print_final_stats=1 \
            -artifact_prefix="$found/" "${extra[@]}" "$dir/corpus" > "$log" 2>&1
        local rc=$?
        n=$(awk '/^stat::number_of_executed_units/ { print $NF }' "$log" | tail -n 1)
        inputs=$((inputs + ${n:-0}))
        n=$(awk '/^stat::new_units_added/ { print $NF }' "$log" | tail -n 1)
        new=$((new + ${n:-0}))
        # the last status line: "#N <event> cov: C ft: F corp: ..."
        local st
        st=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)
        if [ -n "$st" ]; then
            cov=$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<< "$st")
            ft=$(sed -E 's/.*ft: ([0-9]+).*/\1/' <<< "$st")
        fi
        [ "$rc" -eq 0 ] && break
        # a finding: the input libFuzzer saved and the report's summary
        local art why
        art=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -n 1)
        why=$(grep -m 1 -E '^SUMMARY: |ERROR: libFuzzer|runtime error:' "$log" || echo "exit status $rc")
        if [ -z "$art" ] || [ ! -f "$art" ]; then
            echo "$t: exit status $rc without a saved input (see $log)" >> "$dir/findings"
            break
        fi
        # the same input again (a seed that fails): starting over finds nothing new
        if grep -qF "input: $art |" "$dir/findings"; then break; fi
        echo "$why | input: $art | log: $log" >> "$dir/findings"
    done
    local secs=$((SECONDS - t0))
    [ "$secs" -gt 0 ] || secs=1
    printf '%s %s %s %s %s %s %s\n' "$t" "$inputs" "$secs" "$((inputs / secs))" "$cov" "$ft" "$new" > "$dir/summary"
}

echo "fuzzing ${#targets[@]} targets, ${seconds}s each${runs:+ (at most $runs inputs)}, $jobs at a time"
mkdir -p "$build/run" "$build/findings"
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
    fuzz_one "$t" &
    running=$((running + 1))
done
wait

status=0
printf '\n%-16s %12s %8s %10s %7s %8s %6s %9s\n' target inputs seconds inputs/s cov ft new findings
for t in "${targets[@]}"; do
    dir=$build/run/$t
    if [ ! -f "$dir/summary" ]; then printf '%-16s did not run\n' "$t"; status=1; continue; fi
    read -r _ inputs secs rate cov ft new < "$dir/summary"
    nf=$(wc -l < "$dir/findings")
    printf '%-16s %12s %8s %10s %7s %8s %6s %9s\n' "$t" "$inputs" "$secs" "$rate" "$cov" "$ft" "$new" "$nf"
    [ "$nf" -eq 0 ] || status=1
done
for t in "${targets[@]}"; do
    [ -s "$build/run/$t/findings" ] || continue
    echo; echo "findings of $t:"; sed 's/^/  /' "$build/run/$t/findings"
done
echo
[ $status -eq 0 ] && echo "no findings" || echo "FINDINGS: see above (inputs in $build/findings/)"
exit $status
