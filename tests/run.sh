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
# qemu-user as one more group, beside the others and counted last; the
# Cortex-M4 firmware of samples/mcu/ under qemu-system-arm one more. A
# program that crashes counts as one failure.
set -u
cd "$(dirname "$0")/.."
source tests/tally.bash
log=build/tests/log; mkdir -p "$log"

# The runtime tests once more, built for 64-bit Arm and run under qemu-user
# (make test-aarch64; it prints SKIP without the cross compiler or qemu):
# started first and beside the others, as qemu runs on one core; counted in
# its place below.
make --no-print-directory test-aarch64 > "$log/aarch64.out" 2>&1 &
aarch64=$!

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
# The source tree's dependency rules (tests/layout.sh: what libdcz and the
# toolchain may include, and no two runtime objects calling each other).
out=$log/layout.out
bash tests/layout.sh > "$out" 2>&1; tally "source layout" $? "$out"
# The integer kernels hold no floating point, two ways: kernels_int.c
# compiles with -mgeneral-regs-only (the Makefile's kernels_int_nofloat.o,
# stamped with the checksum of the source it was built from; GCC refuses
# float operations there, clang turns them into soft-float calls such as
# __adddf3, which nm finds), and the disassembly of the library's object
# names no floating-point instruction (SSE/AVX arithmetic and conversions,
# x87, AArch64 FP). Without objdump the second half reports SKIP.
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
out=$log/nofloat.out
nofloat_check > "$out" 2>&1; tally "integer kernels build without floating point" $? "$out"
# The minimal builds (ISA=scalar, the references alone; KERNELS=ref,q8) against the native
# one, model by model (make test-scalar: tests/scalar.sh).
out=$log/scalar.out
make --no-print-directory test-scalar > "$out" 2>&1; tally "the minimal builds' outputs" $? "$out"
# The cap on instruction sets (--isa) against qemu-user's CPU models, and on
# every level this CPU has (tests/isa.sh; needs the outbits test-scalar built).
out=$log/isa.out
bash tests/isa.sh > "$out" 2>&1; tally "the instruction-set cap" $? "$out"
# libdcz on a microcontroller: a Cortex-M4 firmware under qemu-system-arm
# gives the host's bits (make test-mcu: tests/mcu.sh; SKIP without the
# arm-none-eabi toolchain, picolibc or QEMU).
out=$log/mcu.out
make --no-print-directory test-mcu > "$out" 2>&1; tally "libdcz on a Cortex-M4 (qemu)" $? "$out"
for s in tests/cli/*.sh; do
    [ -f "$s" ] || continue
    n=$(basename "$s" .sh); out=$log/cli_$n.out
    if bash "$s" > "$out" 2>&1; then echo "1 passed, 0 failed" >> "$out"; tally "cli $n" 0 "$out"
    else rc=$?; tally "cli $n" $rc "$out"; fi
done
wait "$aarch64"; tally "runtime tests on aarch64 (qemu)" $? "$log/aarch64.out"
echo
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
