#!/usr/bin/env bash
# encode removes the units that no layer reads (a fully connected layer's
# outputs, a convolution's filters, whose columns in the layer that reads
# them store no weight): the outputs stay the same bit for bit, the layers'
# widths and the file shrink, the note names each layer; units that are
# read, the input and the output layer stay.
source "$(dirname "$0")/lib.bash"
D=$(fmnist_part 12000 2000)   # a fifth of the training split, enough to learn from
gzip -dc "$ROOT/tests/fixtures/onnx/inputs.f32.gz" > "$T/in.f32" || fail "inputs"

# encoded A B: encodes $T/A.dcz into $T/B.dcz (notes in $T/B.err), and
# checks that both give the same outputs, bit for bit
encoded() {
    "$DCZ" encode "$T/$1.dcz" -o "$T/$2.dcz" 2> "$T/$2.err" || fail "encode $1: $(cat "$T/$2.err")"
    for f in "$1" "$2"; do
        "$DCZ" run "$T/$f.dcz" --raw "$T/in.f32" --shape 100,1,28,28 -q -o "$T/$f.out" > /dev/null || fail "run $f"
    done
    cmp -s "$T/$1.out" "$T/$2.out" || fail "encoding $1 changed its outputs"
}
"$DCZ" train --arch mlp:784-32-16-10 --epochs 1 --data $D --seed 3 --threads 1 -q -o "$T/dense.dcz" || fail "train"
# fc2 kept at 2% (10 of 512 weights): most of fc1's units go unread
"$DCZ" prune "$T/dense.dcz" --sparsity 'fc1=0.5,fc2=0.98,fc3=0' -q -o "$T/p.dcz" || fail "prune"
encoded p e
grep -q 'units that no layer reads removed (the outputs stay the same): fc1 32 -> ' "$T/e.err" ||
    fail "no note: $(cat "$T/e.err")"
"$DCZ" info "$T/e.dcz" --json > "$T/i.json" || fail "info"
w=$(jq -r '.layers[] | select(.name == "fc1") | .shape | join("x")' "$T/i.json")
kept=$(jq -r '.layers[] | select(.name == "fc2") | .kept' "$T/i.json")
units=${w%%x*}
[ "$units" -lt 32 ] && [ "$units" -ge 1 ] && [ "$units" -le "$kept" ] || fail "fc1 is $w with fc2 keeping $kept"
[ "$(jq -r '.layers[] | select(.name == "fc2") | .shape | join("x")' "$T/i.json")" = "16x$units" ] || fail "fc2's columns"
[ "$(jq -r '.layers[] | select(.name == "fc3") | .shape | join("x")' "$T/i.json")" = "10x16" ] ||
    fail "fc2's units are all read and stay: $(jq -c '.layers[] | select(.name == "fc3") | .shape' "$T/i.json")"
[ "$(stat -c %s "$T/e.dcz")" -lt "$(stat -c %s "$T/p.dcz")" ] || fail "not smaller"
# nothing to remove: no note, the same widths
encoded dense d
grep -q 'units that no layer reads' "$T/d.err" && fail "a dense model lost units: $(cat "$T/d.err")"
# convolutions: filters whose windows in the next convolution, or whose
# planes in the fully connected layer after FLATTEN, store no weight go too
# (fc1 keeps 2 weights, so 6 of conv2's 8 filters at least go, then conv2's
# 3 kept weights leave at most 3 of conv1's filters read)
"$DCZ" train --arch cnn:c6k3-p2-c8k3-p2-f10 --epochs 1 --data $D --seed 5 --threads 1 -q -o "$T/cd.dcz" ||
    fail "train cnn"
"$DCZ" prune "$T/cd.dcz" --sparsity 'conv1=0,conv2=0.995,fc1=0.9995' -q -o "$T/cp.dcz" || fail "prune cnn"
encoded cp ce
"$DCZ" info "$T/ce.dcz" --json > "$T/ci.json" || fail "info cnn"
c1=$(jq -r '.layers[] | select(.name == "conv1") | .shape[0]' "$T/ci.json")
c2=$(jq -r '.layers[] | select(.name == "conv2") | .shape | join("x")' "$T/ci.json")
f1=$(jq -r '.layers[] | select(.name == "fc1") | .shape | join("x")' "$T/ci.json")
n2=${c2%%x*}
[ "$c1" -le 3 ] && [ "$n2" -le 2 ] || fail "filters left: conv1 $c1, conv2 $c2 ($(cat "$T/ce.err"))"
[ "$c2" = "${n2}x${c1}x3x3" ] && [ "$f1" = "10x$((n2 * 49))" ] || fail "shapes conv1 $c1, conv2 $c2, fc1 $f1"
grep -q 'conv' "$T/ce.err" || fail "the note names no convolution: $(cat "$T/ce.err")"
echo "shrink ok: fc1 32 -> $units units; conv1 6 -> $c1 filters, conv2 8 -> $n2; outputs the same"
