#!/usr/bin/env bash
# run.sh: runs every dcz test and prints one closing line "N passed, N failed".
#
# Unit and kernel test programs (build/tests/test_*) print their own
# "N passed, N failed" line; fuzz corpora are replayed through
# build/tests/replay_fuzz_*; CLI tests are the scripts tests/cli/*.sh, one
# test each (exit 0 = pass). A program that crashes counts as one failure.
set -u
cd "$(dirname "$0")/.."
passed=0; failed=0; failures=()
log=build/tests/log; mkdir -p "$log"

tally() { # name, exit code, output file
    local name=$1 rc=$2 out=$3 line p f
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    if [ -n "$line" ]; then
        p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
    else
        p=0; f=0
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
    if [ "$f" -ne 0 ]; then failures+=("$name"); echo "FAIL $name (see $out)"; tail -n 20 "$out" | sed 's/^/    /'
    else echo "ok   $name ($p)"; fi
}

for t in build/tests/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t"); out=$log/$n.out
    "$t" > "$out" 2>&1; tally "$n" $? "$out"
done
for r in build/tests/replay_fuzz_*; do
    [ -x "$r" ] || continue
    n=${r##*/replay_fuzz_}; out=$log/replay_$n.out
    "$r" "tests/fuzz/corpus/$n" > "$out" 2>&1; tally "replay $n" $? "$out"
done
if [ -x build/check-lib ]; then
    out=$log/check-lib.out
    { build/check-lib && echo "1 passed, 0 failed"; } > "$out" 2>&1; tally "libdcz links alone" $? "$out"
fi
for s in tests/cli/*.sh; do
    [ -f "$s" ] || continue
    n=$(basename "$s" .sh); out=$log/cli_$n.out
    if bash "$s" > "$out" 2>&1; then echo "1 passed, 0 failed" >> "$out"; tally "cli $n" 0 "$out"
    else rc=$?; tally "cli $n" $rc "$out"; fi
done
echo
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
