#!/usr/bin/env bash
# An image folder's own validation split (ROOT/val/CLASS/NAME.png): dcz
# train then holds nothing out of the training split, and sensitivity and
# compress --budget measure on the val split (every sample of it, none held
# out of retraining, no note about samples the model may have seen);
# --validation N beside it, and a val split of another shape or more
# classes, are refused before any work.
source "$(dirname "$0")/lib.bash"
"$ROOT/build/tests/idx2png" fashion-mnist "$T/src" 40 5 || fail "idx2png"
mkdir -p "$T/d/train" "$T/d/test" "$T/d/val"
nval=0
for c in 0-tshirt 1-trouser 2-pullover; do
    mv "$T/src/train/$c" "$T/d/train/"; mv "$T/src/test/$c" "$T/d/test/"
    mkdir "$T/d/val/$c"
    for f in $(ls "$T/d/train/$c" | head -n 12); do mv "$T/d/train/$c/$f" "$T/d/val/$c/"; nval=$((nval + 1)); done
done
D="$T/d"

# train: every training sample trained on, nothing recorded as held out
"$DCZ" train --arch mlp:784-16-3 --epochs 2 --data "$D" --seed 3 --threads 1 -o "$T/m.dcz" 2> "$T/t.err" ||
    fail "train: $(cat "$T/t.err")"
grep -q 'has a validation split of its own (val/)' "$T/t.err" || fail "no note on the val split: $(cat "$T/t.err")"
"$DCZ" info "$T/m.dcz" --json | grep -q '"validation":' && fail "a hold-out recorded beside the val split"
"$DCZ" train --arch mlp:784-16-3 --epochs 2 --data "$D" --seed 3 --threads 1 --json -q -o "$T/m2.dcz" \
    > "$T/t.json" || fail "train --json"
[ "$(json_field train_samples "$T/t.json")" = $((3 * 40 - nval)) ] || fail "training samples: $(cat "$T/t.json")"
expect 1 "$DCZ" train --arch mlp:784-16-3 --epochs 2 --data "$D" --validation 10 -o "$T/x.dcz"
grep -q 'has a validation split of its own' "$T/err" || fail "--validation beside val/: $(cat "$T/err")"

# sensitivity: on the val split, every sample, no note
L="--sparsity-levels 0.5,0.9 --bits-levels 2 --threads 1"
"$DCZ" sensitivity "$T/m.dcz" --data "$D" $L --json > "$T/s.json" 2> "$T/s.err" || fail "sensitivity: $(cat "$T/s.err")"
[ "$(json_field validation_samples "$T/s.json")" = $nval ] || fail "sensitivity samples: $(cat "$T/s.json")"
grep -q 'does not say' "$T/s.err" && fail "a note beside the val split: $(cat "$T/s.err")"
"$DCZ" sensitivity "$T/m.dcz" --data "$D" $L > "$T/s.txt" || fail "sensitivity table"
grep -q "on $nval validation samples of --data's val split" "$T/s.txt" || fail "table: $(head -n 2 "$T/s.txt")"
expect 1 "$DCZ" sensitivity "$T/m.dcz" --data "$D" $L --validation 10

# compress --budget: on the val split, nothing held out of retraining
F="--rounds 1 --prune-epochs 1 --final-epochs 1 --quant-epochs 1 --threads 1 --budget-runs 1"
"$DCZ" compress "$T/m.dcz" --data "$D" --budget 20 $F -o "$T/c.dcz" --json > "$T/b.json" 2> "$T/b.err" ||
    fail "compress --budget: $(cat "$T/b.err")"
[ "$(json_field validation_samples "$T/b.json")" = $nval ] || fail "budget samples: $(cat "$T/b.json")"
grep -q 'does not say' "$T/b.err" && fail "a note beside the val split: $(cat "$T/b.err")"
grep -q '^validation = 0$' "$T/c.recipe" || fail "recipe: $(cat "$T/c.recipe")"
"$DCZ" info "$T/c.dcz" --json | grep -q '"validation":' && fail "retrained without samples beside the val split"
expect 1 "$DCZ" compress "$T/m.dcz" --data "$D" --budget 20 --validation 10 -o "$T/x.dcz"

# a val split the model cannot take, or of classes the training split lacks
mkdir -p "$T/bad/train" "$T/bad/test" "$T/bad/val/0-tshirt"
cp -r "$D/train/"* "$T/bad/train/"; cp -r "$D/test/"* "$T/bad/test/"
cp "$ROOT/tests/fixtures/png/img0_32x32.png" "$T/bad/val/0-tshirt/0.png"
expect 2 "$DCZ" sensitivity "$T/m.dcz" --data "$T/bad" $L
grep -q 'the val split holds 1x32x32 samples' "$T/err" || fail "val shape: $(cat "$T/err")"
rm -r "$T/bad/val"; mkdir -p "$T/bad/val/9-boot"
cp "$D/val/0-tshirt/$(ls "$D/val/0-tshirt" | head -n 1)" "$T/bad/val/9-boot/0.png"
expect 2 "$DCZ" compress "$T/m.dcz" --data "$T/bad" --budget 20 $F -o "$T/x.dcz"
grep -q "class '9-boot' is not among the classes" "$T/err" || fail "val classes: $(cat "$T/err")"
[ ! -e "$T/x.dcz" ] || fail "wrote an output after refusing the val split"
