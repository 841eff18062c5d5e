#!/usr/bin/env bash
# run_runtime.sh BUILD [RUNNER...]: runs the runtime tests of a cross build
# (make CROSS=..., test programs that link libdcz alone) found in BUILD,
# each through RUNNER (e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu), from the
# repository root so they find the committed corpus; prints one line per
# program and a closing "N passed, N failed" line, as tests/run.sh does.
set -u
cd "$(dirname "$0")/.."
build=${1:?usage: run_runtime.sh BUILD [RUNNER...]}; shift
# under a runner (an emulator) the few grids whose largest cases take
# minutes there leave them to native runs (tests/check.h: check_emulated)
[ $# -gt 0 ] && export DCZ_TEST_EMULATED=1
source tests/tally.bash
log=$build/tests/log; mkdir -p "$log"
start=$(date +%s)


for t in test_kernels test_qkernels test_simd test_static test_arith; do
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
