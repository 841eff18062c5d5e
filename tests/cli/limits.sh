#!/usr/bin/env bash
# Crafted inputs are refused quickly, in bounded memory, with a message
# that says which limit and how to raise it: an IDX file whose gzip
# inflates a thousandfold, and a file of an image folder over the bound.
source "$(dirname "$0")/lib.bash"
# 84,000 images of zero pixels (66 MB) in about 64 KB of gzip, labelled 0
mkdir -p "$T/bomb"
{ printf '\x00\x00\x08\x03'; printf '\x00\x01\x48\x20\x00\x00\x00\x1c\x00\x00\x00\x1c'; head -c 65856000 /dev/zero; } |
    gzip -1 > "$T/bomb/train-images-idx3-ubyte.gz"
{ printf '\x00\x00\x08\x01\x00\x01\x48\x20'; head -c 84000 /dev/zero; } | gzip -1 > "$T/bomb/train-labels-idx1-ubyte.gz"
cp "$T/bomb/train-images-idx3-ubyte.gz" "$T/bomb/t10k-images-idx3-ubyte.gz"
cp "$T/bomb/train-labels-idx1-ubyte.gz" "$T/bomb/t10k-labels-idx1-ubyte.gz"
[ "$(stat -c %s "$T/bomb/train-images-idx3-ubyte.gz")" -lt 1000000 ] || fail "the bomb is not small"
"$DCZ" train --arch mlp:784-8-10 --epochs 1 --data fashion-mnist -q -o "$T/m.dcz" || fail "train"
# memory bounded below what the samples would take as floats (263 MB)
(
    export OPENBLAS_NUM_THREADS=1   # its per-thread buffers count against the bound
    # the address space the shared libraries it maps take (the CUDA
    # backend's cuBLAS alone maps hundreds of MB) on top of the bound
    libs_kb=$(ldd "$DCZ" | awk '$3 ~ /^\// { print $3 }' | xargs -r stat -L -c %s | awk '{ s += $1 } END { print int(s / 1024) }')
    ulimit -v $((400000 + ${libs_kb:-0}))
    expect 2 "$DCZ" eval "$T/m.dcz" --data "$T/bomb" --max-data-mb 64
    grep -q 'its images would take more than 64.0 MiB as floats, over the limit on a dataset.s memory (--max-data-mb raises it)' \
        "$T/err" || fail "bomb message: $(cat "$T/err")"
) || exit 1
"$DCZ" eval "$T/m.dcz" --data "$T/bomb" --max-data-mb 300 -q > /dev/null || fail "raised limit refused"
expect 1 "$DCZ" eval "$T/m.dcz" --data fashion-mnist --max-data-mb 0.5

# PNG folders stream: their samples are never all in memory, so 400 samples
# (1.2 MiB as floats) train under 1 MiB; a file over the bound is refused
# before it is read whole
"$ROOT/build/tests/idx2png" fashion-mnist "$T/png" 40 5 || fail "idx2png"
"$DCZ" train --arch mlp:784-8-10 --epochs 1 --data "$T/png" --max-data-mb 1 -q -o "$T/p.dcz" ||
    fail "400 streamed samples under 1 MiB refused"
"$DCZ" eval "$T/m.dcz" --data "$T/png" --max-data-mb 1 -q > /dev/null || fail "50 test samples under 1 MiB refused"
head -c 1100000 /dev/zero > "$T/png/train/0-tshirt/99999.png"
expect 2 "$DCZ" train --arch mlp:784-8-10 --epochs 1 --data "$T/png" --max-data-mb 1 -o "$T/p.dcz"
grep -q '99999.png: a file of more than 1.0 MiB, over the limit on a dataset.s memory (--max-data-mb raises it)' \
    "$T/err" || fail "PNG bound message: $(cat "$T/err")"
expect 1 "$DCZ" eval "$T/m.dcz" --data "$T/png" --max-data-mb 1e13
echo "limits ok"
