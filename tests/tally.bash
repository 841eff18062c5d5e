# tally.bash: sourced by tests/run.sh and tests/run_runtime.sh. tally NAME
# RC OUT [SECONDS] adds the "N passed, N failed" line of a test program's output OUT
# to the running totals (a program that exits nonzero without reporting a
# failure counts as one), prints one line per program, the tail of a
# failing one's output, and any SKIP lines; SECONDS, where given, the time
# it took.
passed=0; failed=0; failures=()
tally() { # name, exit code, output file
    local name=$1 rc=$2 out=$3 took=${4:+, $4 s} line p f
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    if [ -n "$line" ]; then
        p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
    else
        p=0; f=0
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
    if [ "$f" -ne 0 ]; then failures+=("$name"); echo "FAIL $name (see $out$took)"; tail -n 20 "$out" | sed 's/^/    /'
    else echo "ok   $name ($p$took)"; fi
    grep '^ *SKIP' "$out" | sed 's/^ */    /'
}
