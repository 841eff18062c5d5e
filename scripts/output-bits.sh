#!/usr/bin/env bash
# output-bits.sh: fingerprints of the output bits of every corpus and test
# model, on the kernels this CPU runs and on the scalar references, heap
# and static (bench/outbits.c), so that a change to libdcz that must not
# change a result can be checked: run it before and after, then compare.
#
#   scripts/output-bits.sh OUT.txt            this checkout's build
#   scripts/output-bits.sh --at REV OUT.txt   a clean copy of commit REV
#   RUNNER='qemu-x86_64 -cpu Haswell-v4' scripts/output-bits.sh ...
#       the models run under RUNNER: qemu-user's model of an older CPU runs
#       the kernels of the instruction sets it has (Haswell-v4: AVX2 and
#       FMA, no AVX-512; Nehalem: none, the scalar paths), so every
#       variant the build has can be compared on one machine
#
# The models: the .dcz fuzz corpus, the format-1 fixtures, and the ONNX
# test fixtures imported, each dense, pruned to 90% and shared to 4-bit
# codebooks, and calibrated to int8 where Fashion-MNIST fits its input.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --at ]; then
    rev=$2 out=$(realpath -m "$3")
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    git -C "$top" worktree add -q --detach "$tmp/src" "$rev"
    cp "$top/bench/outbits.c" "$tmp/src/bench/outbits.c"   # the same tool at both commits
    # (a commit before the instruction-set cap builds it without OUTBITS_ISA)
    grep -q dcz_isa_cap "$tmp/src/include/dcz.h" || sed -i '1i #define OUTBITS_NO_ISA 1' "$tmp/src/bench/outbits.c"
    cp "$top/scripts/output-bits.sh" "$tmp/src/scripts/output-bits.sh"
    cp "$top/config.mk" "$tmp/src/" 2>/dev/null || true
    status=0
    bash "$tmp/src/scripts/output-bits.sh" "$out" || status=$?
    git -C "$top" worktree remove --force "$tmp/src"
    exit $status
fi
out=$(realpath -m "$1")
cd "$top"
make -s -j2 DEPS=0 bin/dcz build/bench/outbits >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
models=(tests/fuzz/corpus/dcz/*.dcz tests/fixtures/v1/*.dcz)
for f in tests/fixtures/onnx/*.onnx; do
    n=$(basename "$f" .onnx)
    bin/dcz import -q "$f" -o "$work/$n.dcz" 2>/dev/null || continue
    bin/dcz prune -q "$work/$n.dcz" --sparsity 0.9 -o "$work/$n-pruned.dcz"
    bin/dcz quantize -q "$work/$n-pruned.dcz" --bits 4 -o "$work/$n-q.dcz"
    bin/dcz encode -q "$work/$n-q.dcz" -o "$work/$n-small.dcz"
    models+=("$work/$n.dcz" "$work/$n-small.dcz")
    if bin/dcz calibrate -q "$work/$n-small.dcz" --data fashion-mnist --scheme int8 -o "$work/$n-int8.dcz" \
        2>/dev/null; then
        models+=("$work/$n-int8.dcz")
    fi
done
${RUNNER:-} build/bench/outbits "${models[@]}" 2> "$work/runner.err" | sed "s|$work/||" > "$out"
echo "output-bits: $(wc -l < "$out") fingerprints of ${#models[@]} models in $out"
