#!/usr/bin/env bash
# encode removes the units of fully connected layers that no layer reads
# (their column in the next layer stores no weight): the outputs stay the
# same bit for bit, the layers' widths and the file shrink, the note names
# each layer; a unit read by a column, the input and the output layer stay.
source "$(dirname "$0")/lib.bash"
D=fashion-mnist
gzip -dc "$ROOT/tests/fixtures/onnx/inputs.f32.gz" > "$T/in.f32" || fail "inputs"
"$DCZ" train --arch mlp:784-32-16-10 --epochs 1 --data $D --seed 3 --threads 1 -q -o "$T/dense.dcz" || fail "train"
# fc2 kept at 2% (10 of 512 weights): most of fc1's units go unread
"$DCZ" prune "$T/dense.dcz" --sparsity 'fc1=0.5,fc2=0.98,fc3=0' -q -o "$T/p.dcz" || fail "prune"
"$DCZ" encode "$T/p.dcz" -o "$T/e.dcz" 2> "$T/e.err" || fail "encode: $(cat "$T/e.err")"
grep -q 'units that no layer reads removed (the outputs stay the same): fc1 32 -> ' "$T/e.err" ||
    fail "no note: $(cat "$T/e.err")"
for f in p e; do
    "$DCZ" run "$T/$f.dcz" --raw "$T/in.f32" --shape 100,1,28,28 -q -o "$T/$f.out" > /dev/null || fail "run $f"
done
cmp -s "$T/p.out" "$T/e.out" || fail "the outputs changed"
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
"$DCZ" encode "$T/dense.dcz" -o "$T/d.dcz" 2> "$T/d.err" || fail "encode dense"
grep -q 'units that no layer reads' "$T/d.err" && fail "a dense model lost units: $(cat "$T/d.err")"
"$DCZ" run "$T/d.dcz" --raw "$T/in.f32" --shape 100,1,28,28 -q -o "$T/d.out" > /dev/null || fail "run dense"
"$DCZ" run "$T/dense.dcz" --raw "$T/in.f32" --shape 100,1,28,28 -q -o "$T/d0.out" > /dev/null || fail "run dense"
cmp -s "$T/d.out" "$T/d0.out" || fail "the dense outputs changed"
echo "shrink ok: fc1 32 -> $units units, outputs the same"
