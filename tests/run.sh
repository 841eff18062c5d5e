#!/usr/bin/env bash
# run.sh: runs every dcz test and prints one closing line "N passed, N failed".
#
# Unit and kernel test programs (build/tests/test_*) print their own
# "N passed, N failed" line; fuzz corpora are replayed through
# build/tests/replay_fuzz_*; CLI tests are the scripts tests/cli/*.sh, one
# test each (exit 0 = pass); the integer kernels' proof of holding no
# floating point is one more (two checks), the source tree's include rules
# and the runtime objects' calls one more (tests/layout.sh), the minimal
# build's outputs one more (tests/scalar.sh), the instruction-set cap one
# more (tests/isa.sh); the runtime tests built for 64-bit Arm run under
# qemu-user as one more group; the Cortex-M4 firmware of samples/mcu/ under
# qemu-system-arm one more. A program that crashes counts as one failure.
#
# The tests run TEST_JOBS at once (default: every core), the longest
# first; each one's line is printed as it ends, so their order varies from
# run to run, the closing line does not.
set -u
cd "$(dirname "$0")/.."
source tests/tally.bash
log=build/tests/log; mkdir -p "$log"
rm -f "$log"/*.out

nofloat_check() {
    local src=runtime/cpu/ref/kernels_int.c nf=build/tests/kernels_int_nofloat obj=build/runtime/cpu/ref/kernels_int.o
    local p=0 f=0 hits soft=""
    if command -v nm > /dev/null 2>&1 && [ -f $nf.o ]; then
        soft=$(nm -u $nf.o | awk '{ print $NF }' |
               grep -E '^__(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|unord|extend|trunc|fix|fixuns|float|floatun|powi)[a-z]*(sf|df|tf|xf|hf|bf)[0-9a-z]*$')
    fi
    if [ -f $nf.o ] && [ -f $nf.stamp ] && [ "$(cksum < $src)" = "$(cat $nf.stamp)" ] && [ -z "$soft" ]; then
        echo "ok   $src compiles with -mgeneral-regs-only"; p=$((p + 1))
    elif [ -n "$soft" ]; then
        echo "FAIL $nf.o calls soft-float routines:" $soft; f=$((f + 1))
    else
        echo "FAIL $src: no $nf.o compiled from the current source with -mgeneral-regs-only"
        [ -f $nf.log ] && head -n 20 $nf.log; f=$((f + 1))
    fi
    if ! command -v objdump > /dev/null 2>&1; then
        echo "SKIP float instruction scan: objdump not found"
    elif [ ! -f $obj ] || [ $src -nt $obj ]; then
        echo "FAIL $obj missing or older than $src"; f=$((f + 1))
    else
        hits=$(objdump -d --no-show-raw-insn $obj | awk -F'\t' '
            NF >= 2 {
                n = split($2, t, /[ \t]+/); i = 1
                while (i < n && t[i] ~ /^(rep[a-z]*|lock|data16|addr32|[cdefgs]s|notrack|bnd|rex[.A-Za-z]*)$/) i++
                m = t[i]
                if (m ~ /^(v?(add|sub|mul|div|sqrt|min|max|rcp|rsqrt|round|hadd|hsub|addsub|dp|u?comi|cmp[a-z]*)(ss|sd|ps|pd)|v?cvt[a-z0-9]*|vf[a-z0-9]*|f[a-z0-9]*|[su]cvtf)$/ && m != "fmov")
                    print
            }')
        if [ -z "$hits" ]; then echo "ok   $obj: no floating-point instruction"; p=$((p + 1))
        else echo "FAIL $obj holds floating-point instructions:"; echo "$hits" | head -n 10; f=$((f + 1)); fi
    fi
    echo "$p passed, $f failed"
}

# The jobs, one a test (or a group that must run in turn), each a command
# whose output goes to $log/NAME.out: the two long groups queued first, so
# that they do not end the run alone.
names=(); cmds=()
job() { names+=("$1"); cmds+=("$2"); }
# the runtime tests built for 64-bit Arm, under qemu-user (make
# test-aarch64; it prints SKIP without the cross compiler or qemu)
job "runtime tests on aarch64 (qemu)" "make --no-print-directory test-aarch64"
# the minimal builds (ISA=scalar, the references alone; KERNELS=ref,q8)
# against the native one, model by model (make test-scalar:
# tests/scalar.sh); then the cap on instruction sets (--isa) against
# qemu-user's CPU models and on every level this CPU has (tests/isa.sh:
# it needs the outbits test-scalar builds)
minimal="the minimal builds' outputs"
job "$minimal" "make --no-print-directory test-scalar"
for t in build/tests/test_*; do
    [ -x "$t" ] && job "$(basename "$t")" "$t"
done
for s in tests/cli/*.sh; do
    [ -f "$s" ] && job "cli $(basename "$s" .sh)" "bash $s && echo '1 passed, 0 failed'"
done
for r in build/tests/replay_fuzz_*; do
    [ -x "$r" ] && job "replay ${r##*/replay_fuzz_}" "$r tests/fuzz/corpus/${r##*/replay_fuzz_}"
done
[ -x build/check-lib ] && job "libdcz links alone" "build/check-lib && echo '1 passed, 0 failed'"
# the source tree's dependency rules (what libdcz and the toolchain may
# include, and no two runtime objects calling each other)
job "source layout" "bash tests/layout.sh"
job "integer kernels build without floating point" nofloat_check
# libdcz on a microcontroller: a Cortex-M4 firmware under qemu-system-arm
# gives the host's bits (make test-mcu: tests/mcu.sh; SKIP without the
# arm-none-eabi toolchain, picolibc or QEMU)
job "libdcz on a Cortex-M4 (qemu)" "make --no-print-directory test-mcu"

# a job's output file
outfile() { echo "$log/$(echo "$1" | tr -c 'A-Za-z0-9_.\n-' '_').out"; }

jobs_max=${TEST_JOBS:-$(nproc 2> /dev/null || echo 1)}
[ "$jobs_max" -ge 1 ] 2> /dev/null || jobs_max=1
declare -A running=()   # pid -> job index
began=()                # job index -> its start, seconds
finish() { # index, exit code
    local i=$1 rc=$2 out
    out=$(outfile "${names[$i]}")
    tally "${names[$i]}" "$rc" "$out" $((SECONDS - began[i]))
    # the instruction-set cap runs once the minimal builds are built
    [ "${names[$i]}" = "$minimal" ] && job "the instruction-set cap" "bash tests/isa.sh"
}
start() {
    local i=$1
    began[i]=$SECONDS
    ( eval "${cmds[$i]}" ) > "$(outfile "${names[$i]}")" 2>&1 &
    running[$!]=$i
}
next=0
while [ $next -lt ${#names[@]} ] || [ ${#running[@]} -gt 0 ]; do
    while [ $next -lt ${#names[@]} ] && [ ${#running[@]} -lt "$jobs_max" ]; do
        start $next; next=$((next + 1))
    done
    unset pid; wait -n -p pid; rc=$?
    [ -n "${pid:-}" ] || continue
    i=${running[$pid]}; unset "running[$pid]"
    finish "$i" "$rc"
done
echo
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
