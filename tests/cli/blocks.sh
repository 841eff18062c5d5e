#!/usr/bin/env bash
# Pruning by blocks of input channels (--block N): prune and compress keep
# or prune whole blocks of N input channels of an output at a tap, their
# records say block = N (dcz info --json), the same command gives the same
# file, and a file pruned by blocks of 4 stores its positions in fewer
# bytes than one pruned weight by weight at the same sparsity; its int8
# calibration gives the float file's predictions on most samples; a block
# outside 1..64 is refused before any work. (Which weights go is checked in
# tests/unit/test_prune.c.)
source "$(dirname "$0")/lib.bash"
if [ ! -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    echo "SKIP: Debian's dataset-fashion-mnist is not installed"
    exit 0
fi
D=$(fmnist_part 2000 300)
details() { "$DCZ" info "$1" --json | jq -c '.stage_details'; }
"$DCZ" train --arch lenet5 --epochs 2 --data "$D" --seed 3 --threads 1 -q -o "$T/dense.dcz" || fail "train"
P="--sparsity 0.8 --rounds 1 --prune-epochs 1 --final-epochs 1 --threads 1"

"$DCZ" prune "$T/dense.dcz" --data "$D" $P --block 4 -q -o "$T/b4.dcz" || fail "prune --block 4"
details "$T/b4.dcz" | jq -e '.[-1] | .stage == "prune" and .block == "4"' > /dev/null ||
    fail "the prune record: $(details "$T/b4.dcz")"
cp "$T/b4.dcz" "$T/b4-1.dcz"
"$DCZ" prune "$T/dense.dcz" --data "$D" $P --block 4 -q -o "$T/b4.dcz" || fail "prune --block 4 again"
cmp -s "$T/b4.dcz" "$T/b4-1.dcz" || fail "the same command, another file"
"$DCZ" prune "$T/dense.dcz" --data "$D" $P -q -o "$T/b1.dcz" || fail "prune"
details "$T/b1.dcz" | jq -e '.[-1] | has("block") | not' > /dev/null || fail "block recorded without --block"

# encoded, the blocks' positions cost less than single weights' (conv2 and
# fc1: 20 and 800 input channels a row)
for b in b1 b4; do
    "$DCZ" quantize "$T/$b.dcz" --bits 4 -q -o "$T/$b-q.dcz" && "$DCZ" encode "$T/$b-q.dcz" -q -o "$T/$b-c.dcz" ||
        fail "quantize and encode $b"
done
"$DCZ" compress "$T/dense.dcz" --data "$D" $P --block 4 --bits 4 --quant-epochs 1 -q -o "$T/c4.dcz" ||
    fail "compress --block 4"
details "$T/c4.dcz" | jq -e '[.[] | select(.stage == "prune")][0].block == "4"' > /dev/null ||
    fail "compress --block 4: $(details "$T/c4.dcz")"
gap() { "$DCZ" info "$1" --json | jq "[.layers[] | select(.name == \"$2\") | .gap_block_bytes][0]"; }
for l in conv2 fc1; do
    g1=$(gap "$T/b1-c.dcz" $l) g4=$(gap "$T/b4-c.dcz" $l)
    [ "$g4" -lt "$g1" ] || fail "$l: positions of blocks $g4 bytes, of single weights $g1"
done

# int8 on the blocks: the calibrated file runs and agrees with its floats
"$DCZ" calibrate "$T/b4-c.dcz" --data "$D" -q -o "$T/b4-i8.dcz" || fail "calibrate"
a8=$("$DCZ" eval "$T/b4-i8.dcz" --data "$D" --json -q | jq -r .accuracy)
a32=$("$DCZ" eval "$T/b4-c.dcz" --data "$D" --json -q | jq -r .accuracy)
awk -v a="$a8" -v b="$a32" 'BEGIN { d = a - b; exit !(d < 0.03 && d > -0.03 && b > 0.5) }' ||
    fail "int8 $a8 against float $a32"

# refused before reading anything
for bad in 0 65 x; do
    expect 1 "$DCZ" prune "$T/dense.dcz" --data "$T/none" --block $bad -o "$T/bad.dcz"
    grep -q -- "--block" "$T/err" || fail "--block $bad: $(cat "$T/err")"
    [ ! -e "$T/bad.dcz" ] || fail "--block $bad wrote a file"
done
echo ok
