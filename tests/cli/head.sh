#!/usr/bin/env bash
# head.sh: compress --head N: a network imported from ONNX (the ResNet-style
# fixture, 10 outputs) compressed with retraining for a generated folder of
# JPEG images of 3 classes: refused without --head (the message names
# --head 3) or with a head of another width, then written with 3 outputs
# and an accuracy its fresh head did not have (a model ending in no fully
# connected layer: tests/unit/test_train.c, test_new_head); train --head
# fine-tunes it, or gives an architecture one output per class.
. "$(dirname "$0")/lib.bash"

"$ROOT/build/tests/idx2png" fashion-mnist "$T/p10" 30 10 jpeg || fail "idx2png"
mkdir -p "$T/p3/train" "$T/p3/test"
for c in 0-tshirt 1-trouser 8-bag; do mv "$T/p10/train/$c" "$T/p3/train/"; mv "$T/p10/test/$c" "$T/p3/test/"; done
expect 0 "$DCZ" import "$ROOT/tests/fixtures/onnx/resnet.onnx" -o "$T/rn.dcz"
fast=(--rounds 1 --prune-epochs 3 --final-epochs 4 --quant-epochs 1 --sparsity 0.5 --seed 2)

expect 2 "$DCZ" compress "$T/rn.dcz" --data "$T/p3" "${fast[@]}" -o "$T/x.dcz"
grep -q 'has 3 classes and .*rn.dcz 10 outputs: .*give --head 3' "$T/err" || fail "no --head: $(cat "$T/err")"
! grep -q epoch "$T/err" && [ ! -e "$T/x.dcz" ] || fail "retrained or wrote before refusing"
expect 2 "$DCZ" compress "$T/rn.dcz" --data "$T/p3" --head 4 "${fast[@]}" -o "$T/x.dcz"
grep -q -- '--head 4: --data .* has 3 classes; give --head 3' "$T/err" || fail "--head 4: $(cat "$T/err")"
expect 1 "$DCZ" compress "$T/rn.dcz" --data "$T/p3" --head -1 -o "$T/x.dcz"

expect 0 "$DCZ" compress "$T/rn.dcz" --data "$T/p3" --head 3 "${fast[@]}" --json -o "$T/x.dcz"
grep -q 'replaced by 3 fresh ones' "$T/err" || fail "no note of the new head: $(cat "$T/err")"
acc=$(sed -n 's/.*"accuracy":\([0-9.e+-]*\),"accuracy_input".*/\1/p' "$T/out")
in=$(sed -n 's/.*"accuracy_input":\([0-9.e+-]*\).*/\1/p' "$T/out")
awk -v a="$acc" -v i="$in" 'BEGIN { exit !(a >= 0.6 && a > i) }' ||
    fail "accuracy $acc after retraining, $in with the fresh head"
expect 0 "$DCZ" info "$T/x.dcz" --json
grep -q '"output_shape":\[3\]' "$T/out" || fail "the output is not 3 wide"
expect 0 "$DCZ" eval "$T/x.dcz" --data "$T/p3" --json
grep -q '"samples":30' "$T/out" || fail "eval: $(cat "$T/out")"

# train --head: the imported network fine-tuned for the 3 classes (dense),
# and an architecture trained from scratch with 3 outputs; without --head
# the 10-output architecture is refused for 3 classes
expect 0 "$DCZ" train "$T/rn.dcz" --head 3 --data "$T/p3" --epochs 3 --seed 2 --json -o "$T/ft.dcz"
acc=$(json_field accuracy "$T/out")
awk -v a="$acc" 'BEGIN { exit !(a >= 0.6) }' || fail "fine-tuned accuracy $acc"
expect 0 "$DCZ" info "$T/ft.dcz" --json
grep -q '"output_shape":\[3\]' "$T/out" && grep -q '"command":"dcz train [^"]*rn.dcz --head 3' "$T/out" ||
    fail "fine-tuned: $(head -c 400 "$T/out")"
expect 2 "$DCZ" train --arch lenet5 --data "$T/p3" --epochs 1 -o "$T/x.dcz"
grep -q "give the last layer one output per class" "$T/err" || fail "no head: $(cat "$T/err")"
expect 0 "$DCZ" train --arch lenet5 --head 3 --data "$T/p3" --epochs 1 -o "$T/l5.dcz"
expect 1 "$DCZ" train "$T/rn.dcz" --arch lenet5 --data "$T/p3" -o "$T/x.dcz"

echo "head: ok"
