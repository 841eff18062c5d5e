#!/usr/bin/env bash
# isa.sh: the cap on the CPU's instruction sets (dcz_options.isa, --isa)
# runs the kernels of the level it names, checked three ways on every
# corpus and fixture model (bench/outbits.c's fingerprints, batch 1 and 3,
# heap and static):
# - against an emulated CPU: a level capped here gives, bit for bit, what
#   this same binary gives under qemu-user's model of a CPU that has that
#   level and no more (scalar: Nehalem, avx2: Haswell-v4; qemu emulates no
#   AVX-512), so the cap takes every variant a CPU without the higher sets
#   would take;
# - the levels differ: avx2 and scalar give other bits than each other on
#   some float model (a cap that did nothing would not);
# - on every level this CPU has, the integer models give the references'
#   bits, as they do uncapped;
# and the CLI: each level dcz info takes, a level this CPU lacks refused
# (exit 4, naming what it has), an unknown name a usage error (exit 1).
# Needs build/bench/outbits and bin/dcz (make test-scalar builds outbits).
set -u
cd "$(dirname "$0")/.."
outbits=build/bench/outbits
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
for b in $outbits bin/dcz; do
    [ -x "$b" ] || { echo "FAIL no $b (make test-scalar)"; echo "0 passed, 1 failed"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=(tests/fuzz/corpus/dcz/*.dcz tests/fixtures/v1/*.dcz)
has() { bin/dcz info "${models[0]}" --isa "$1" > /dev/null 2>&1; }
fast() { grep ' fast-' "$1" | sort; }

x86=0
case "$(uname -m)" in x86_64|i?86) x86=1 ;; esac
if [ $x86 = 1 ] && command -v qemu-x86_64 > /dev/null 2>&1; then
    for pair in scalar:Nehalem avx2:Haswell-v4; do
        level=${pair%%:*} model=${pair#*:}
        if ! has "$level"; then echo "skip $level: this CPU lacks it"; continue; fi
        OUTBITS_QUICK=1 OUTBITS_ISA=$level $outbits "${models[@]}" > "$tmp/cap-$level"
        OUTBITS_QUICK=1 qemu-x86_64 -cpu "$model" $outbits "${models[@]}" > "$tmp/emu-$level" 2> /dev/null
        n=$(fast "$tmp/cap-$level" | wc -l)
        if [ "$n" -gt 0 ] && diff <(fast "$tmp/emu-$level") <(fast "$tmp/cap-$level") > "$tmp/diff"; then
            ok "--isa $level: the bits of qemu's $model on all $n runs of ${#models[@]} models"
        else
            bad "--isa $level against qemu's $model ($n runs):"; head -n 10 "$tmp/diff"
        fi
    done
    if [ -f "$tmp/cap-scalar" ] && [ -f "$tmp/cap-avx2" ]; then
        d=$(diff <(fast "$tmp/cap-scalar") <(fast "$tmp/cap-avx2") | grep -c '^<')
        if [ "$d" -gt 0 ]; then ok "scalar and avx2 differ on $d runs: the cap changes kernels"
        else bad "--isa scalar and --isa avx2 give the same bits on every run: the cap changes nothing"; fi
    fi
else
    echo "skip the emulated CPUs: not x86 or no qemu-x86_64"
fi

# the integer models: every level's kernels give the references' bits
int=$(ls tests/fuzz/corpus/dcz/*calib_int8*.dcz tests/fuzz/corpus/dcz/*calib_fixed8*.dcz 2> /dev/null)
for level in scalar avx2 avx512 avx512-vnni avx512-vbmi neon; do
    has "$level" || continue
    OUTBITS_QUICK=1 OUTBITS_ISA=$level $outbits $int > "$tmp/int-$level"
    want=$(sed -n 's/ reference-\(heap\|static\) / \1 /p' "$tmp/int-$level" | sort)
    got=$(sed -n 's/ fast-\(heap\|static\) / \1 /p' "$tmp/int-$level" | sort)
    if [ -n "$want" ] && [ "$want" = "$got" ]; then
        ok "--isa $level: $(echo "$int" | wc -w) integer models give the references' bits"
    else
        bad "--isa $level: integer models differ from the references"
        diff <(echo "$want") <(echo "$got") | head -n 6
    fi
done

# the CLI
m=tests/fuzz/corpus/dcz/calib_int8_conv.dcz
lacking=""
for level in neon avx2; do has "$level" || { lacking=$level; break; }; done
if [ -n "$lacking" ]; then
    bin/dcz run "$m" --raw /dev/null --isa "$lacking" > /dev/null 2> "$tmp/err"; rc=$?
    if [ $rc = 4 ] && grep -q "needs $lacking.*it has:" "$tmp/err"; then
        ok "--isa $lacking refused on this machine: $(head -n 1 "$tmp/err")"
    else
        bad "--isa $lacking: exit $rc (want 4): $(cat "$tmp/err")"
    fi
fi
bin/dcz bench "$m" --isa sse9 > /dev/null 2> "$tmp/err"; rc=$?
if [ $rc = 1 ] && grep -q "isa must be native, scalar" "$tmp/err"; then ok "--isa sse9: a usage error"
else bad "--isa sse9: exit $rc (want 1): $(cat "$tmp/err")"; fi
plans=$(for level in scalar avx2 native; do
            has "$level" && bin/dcz info "$m" --isa "$level" --json | grep -o '"kernel": *"[^"]*"' | tr '\n' ' '
            echo
        done | sort -u | grep -c .)
if [ "$plans" -ge 2 ]; then ok "dcz info --isa: $plans different plans of $m over scalar, avx2 and native"
else bad "dcz info --isa: one plan for every level of $m"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
