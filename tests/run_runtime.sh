#!/usr/bin/env bash
# run_runtime.sh BUILD [RUNNER...]: runs the runtime tests of a cross build
# (make CROSS=..., test programs that link libdcz alone) found in BUILD,
# each through RUNNER (e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu), from the
# repository root so they find the committed corpus; prints one line per
# program and a closing "N passed, N failed" line, as tests/run.sh does.
set -u
cd "$(dirname "$0")/.."
build=${1:?usage: run_runtime.sh BUILD [RUNNER...]}; shift
passed=0; failed=0; failures=()
log=$build/tests/log; mkdir -p "$log"
start=$(date +%s)

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
    grep '^SKIP' "$out" | sed 's/^/    /'
}

for t in test_kernels test_qkernels test_static; do
    out=$log/$t.out
    if [ ! -x "$build/tests/$t" ]; then echo "missing $build/tests/$t" > "$out"; tally "$t" 1 "$out"; continue; fi
    "$@" "$build/tests/$t" > "$out" 2>&1; tally "$t" $? "$out"
done
out=$log/check-lib.out
{ "$@" "$build/check-lib" && echo "1 passed, 0 failed"; } > "$out" 2>&1; tally "libdcz links alone" $? "$out"
echo
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "$build: $(( $(date +%s) - start )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
