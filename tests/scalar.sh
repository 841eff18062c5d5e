#!/usr/bin/env bash
# scalar.sh: a minimal build of libdcz runs every corpus and fixture model,
# and gives each the bits the native build gives with its references
# forced (bench/outbits.c: batch 1, 3 and 64, heap and static); and, for
# the integer models (calibrated int8 and fixed point, and a LeNet-300-100
# pruned, shared and calibrated to int8 here, on 600 Fashion-MNIST images),
# the bits of the native build's own vector kernels too, which match the
# references exactly.
#
#   tests/scalar.sh [BUILD...]
#     build-scalar (the default): make ISA=scalar, the scalar references alone,
#       no vector kernel, no extra weight form
#     build-ref-q8: make KERNELS=ref,q8, the references and the 8-bit
#       integer kernels: the float layers on the references, the integer
#       models on the very kernels the native build runs them with (the
#       kernels' names compared, OUTBITS_KERNELS)
#
# Needs build/bench/outbits, BUILD/bench/outbits (make test-scalar builds
# them) and bin/dcz.
set -u
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- build-scalar
native=build/bench/outbits
for b in $native "${@/%//bench/outbits}"; do
    [ -x "$b" ] || { echo "FAIL no $b (make test-scalar)"; echo "0 passed, 1 failed"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=(tests/fuzz/corpus/dcz/*.dcz tests/fixtures/v1/*.dcz)
# LeNet-300-100 on integers: the first 600 training and 200 test images
fm=/usr/share/datasets/fashion-mnist
lenet=""
if [ -x bin/dcz ] && [ -f $fm/train-images-idx3-ubyte.gz ]; then
    d=$tmp/data
    bash scripts/fmnist-subset.sh "$d" 600 200
    if bin/dcz train --arch lenet300 --epochs 1 --data "$d" --seed 3 --threads 2 -q -o "$tmp/dense.dcz" &&
       bin/dcz prune "$tmp/dense.dcz" --sparsity 0.9 -q -o "$tmp/pruned.dcz" &&
       bin/dcz quantize "$tmp/pruned.dcz" --bits 5 -q -o "$tmp/shared.dcz" &&
       bin/dcz calibrate "$tmp/shared.dcz" --data "$d" --scheme int8 -q -o "$tmp/lenet300-int8.dcz" > /dev/null; then
        lenet=$tmp/lenet300-int8.dcz
        models+=("$lenet")
    else
        echo "FAIL making the int8 LeNet-300-100"; echo "0 passed, 1 failed"; exit 1
    fi
fi
OUTBITS_KERNELS=1 "$native" "${models[@]}" > "$tmp/native"
int=$(ls tests/fuzz/corpus/dcz/*calib_*.dcz tests/fixtures/v1/*-int8.dcz tests/fixtures/v1/*-fixed8.dcz $lenet 2> /dev/null)
passed=0 failed=0
for build in "$@"; do
name=${build#build-}
OUTBITS_KERNELS=1 "$build/bench/outbits" "${models[@]}" > "$tmp/scalar"
# the minimal build: its own kernels ("fast") give the references' bits
sed -n 's/ reference-\(heap\|static\) / \1 /p' "$tmp/native" | sort > "$tmp/want"
sed -n 's/ fast-\(heap\|static\) / \1 /p' "$tmp/scalar" | sort > "$tmp/got"
n=$(wc -l < "$tmp/want")
if [ "$n" -gt 0 ] && diff "$tmp/want" "$tmp/got" > "$tmp/diff"; then
    echo "ok   $n runs: the $name build gives the native references' bits"
    passed=$((passed + 1))
else
    echo "FAIL the $name build against the native references ($n runs):"; head -n 20 "$tmp/diff"
    failed=$((failed + 1))
fi
# integer models: the native vector kernels' bits as well
grep -F -f <(echo "$int" | sed 's/$/ fast-/') "$tmp/native" | sed 's/ fast-/ /' | sort > "$tmp/want_int"
grep -F -f <(echo "$int" | sed 's/$/ fast-/') "$tmp/scalar" | sed 's/ fast-/ /' | sort > "$tmp/got_int"
m=$(wc -l < "$tmp/want_int")
if [ "$m" -gt 0 ] && diff "$tmp/want_int" "$tmp/got_int" > "$tmp/diff"; then
    echo "ok   $(echo "$int" | wc -l) integer models, $m runs: the $name build gives the native vector kernels' bits"
    passed=$((passed + 1))
else
    echo "FAIL integer models, the $name build against the native vector kernels ($m runs):"; head -n 20 "$tmp/diff"
    failed=$((failed + 1))
fi
# KERNELS=ref,q8: the integer models run on the native build's kernels
if [ "$name" = ref-q8 ]; then
    grep -F -f <(echo "$int" | sed 's/$/ kernels:/') "$tmp/native" > "$tmp/kn"
    grep -F -f <(echo "$int" | sed 's/$/ kernels:/') "$tmp/scalar" > "$tmp/kq"
    if [ -s "$tmp/kn" ] && diff "$tmp/kn" "$tmp/kq" > "$tmp/diff"; then
        echo "ok   $(wc -l < "$tmp/kn") integer models: the $name build runs them on the native build's kernels ($(grep -o '[a-z0-9_]* (integers)' "$tmp/kn" | sort -u | sed 's/ (integers)//' | tr '\n' ' '))"
        passed=$((passed + 1))
    else
        echo "FAIL integer models' kernels, the $name build against the native one:"; head -n 20 "$tmp/diff"
        failed=$((failed + 1))
    fi
fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
