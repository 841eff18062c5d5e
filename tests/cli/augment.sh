#!/usr/bin/env bash
# Training augmentation (--augment: torchvision's RandomResizedCrop and
# RandomHorizontalFlip on training batches): train, prune, quantize and
# compress take it on an image folder, record it in their stage records
# (augment = crop+flip) and train otherwise than without it; the same
# command gives the same file byte for byte, and one thread or two the
# same model (in sharded steps too); without it nothing is recorded and the model is the one of
# --augment none. On IDX data, flip is taken and crop refused (exit 1), as
# are unknown names and --augment without --data. (The crops, flips and
# their reproducibility are checked sample by sample in
# tests/unit/test_png.c.)
source "$(dirname "$0")/lib.bash"
if [ ! -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    echo "SKIP: Debian's dataset-fashion-mnist is not installed"
    exit 0
fi
"$ROOT/build/tests/idx2png" fashion-mnist "$T/imgs" 12 6 > /dev/null || fail "idx2png"
mkdir "$T/o"
details() { "$DCZ" info "$1" --json | grep -o '"stage_details":.*' | sed 's/\],"macs.*//'; }
train() { "$DCZ" train --arch lenet5 --epochs 2 --data "$T/imgs" --seed 7 -q -o "$T/o/m.dcz" "$@"; }

# recorded, reproducible to the byte, the same model with 1 and 2 threads
train --augment crop+flip --threads 2 || fail "train --augment crop+flip"
cp "$T/o/m.dcz" "$T/a1.dcz"
details "$T/a1.dcz" | grep -q '"stage":"train",[^}]*"augment":"crop+flip"' ||
    fail "no augment = crop+flip in the train record: $(details "$T/a1.dcz")"
train --augment crop+flip --threads 2 || fail "train again"
cmp "$T/o/m.dcz" "$T/a1.dcz" || fail "the same command, another file"
train --augment crop+flip --threads 1 || fail "train, 1 thread"
[ "$(model_hash "$T/o/m.dcz")" = "$(model_hash "$T/a1.dcz")" ] || fail "1 and 2 threads train other models"
train --augment crop+flip --shards 2 --threads 1 || fail "sharded, 1 thread"
cp "$T/o/m.dcz" "$T/s1.dcz"
train --augment crop+flip --shards 2 --threads 2 || fail "sharded, 2 threads"
[ "$(model_hash "$T/o/m.dcz")" = "$(model_hash "$T/s1.dcz")" ] || fail "sharded: 1 and 2 threads train other models"
train --augment crop+flip --threads 2 --seed 8 || fail "train, another seed"
[ "$(model_hash "$T/o/m.dcz")" != "$(model_hash "$T/a1.dcz")" ] || fail "another seed, the same model"

# off by default: nothing recorded, the model of --augment none, another
# than an augmented one
train --threads 2 || fail "train"
cp "$T/o/m.dcz" "$T/plain.dcz"
details "$T/plain.dcz" | grep -q '"augment"' && fail "augment recorded without --augment: $(details "$T/plain.dcz")"
train --threads 2 --augment none || fail "train --augment none"
[ "$(model_hash "$T/o/m.dcz")" = "$(model_hash "$T/plain.dcz")" ] || fail "--augment none is not the default"
[ "$(model_hash "$T/a1.dcz")" != "$(model_hash "$T/plain.dcz")" ] || fail "augmentation changed nothing"
for a in flip crop; do
    train --threads 2 --augment $a || fail "train --augment $a"
    [ "$(model_hash "$T/o/m.dcz")" != "$(model_hash "$T/plain.dcz")" ] || fail "--augment $a changed nothing"
done

# through a recorded preprocessing: crops of the recorded crop's size
train --resize 32 --crop 28 --normalize 0.286/0.353 --augment crop+flip || fail "crops with a preprocessing"
"$DCZ" info "$T/o/m.dcz" | grep -q "^images: size shorter side to 32, crop center 28x28" || fail "record lost"

# the retraining verbs
"$DCZ" prune "$T/plain.dcz" --sparsity 0.5 --rounds 1 --prune-epochs 1 --final-epochs 1 --data "$T/imgs" \
    --augment flip -q -o "$T/p.dcz" || fail "prune --augment flip"
details "$T/p.dcz" | grep -q '"stage":"prune",[^}]*"augment":"flip"' || fail "prune record: $(details "$T/p.dcz")"
"$DCZ" quantize "$T/p.dcz" --quant-epochs 1 --data "$T/imgs" --augment crop -q -o "$T/q.dcz" ||
    fail "quantize --augment crop"
details "$T/q.dcz" | grep -q '"stage":"quantize",[^}]*"augment":"crop"' || fail "quantize record: $(details "$T/q.dcz")"
"$DCZ" compress "$T/plain.dcz" --rounds 1 --prune-epochs 1 --final-epochs 1 --quant-epochs 1 --data "$T/imgs" \
    --augment crop+flip -q -o "$T/c.dcz" || fail "compress --augment crop+flip"
[ "$(details "$T/c.dcz" | grep -o '"augment":"crop+flip"' | wc -l)" = 2 ] ||
    fail "compress: prune and quantize records: $(details "$T/c.dcz")"

# IDX: flips taken, crops refused; bad names; no data
"$DCZ" train --arch lenet300 --epochs 1 --data fashion-mnist --validation 59000 --augment flip -q -o "$T/i.dcz" ||
    fail "flips of IDX samples"
details "$T/i.dcz" | grep -q '"augment":"flip"' || fail "IDX record: $(details "$T/i.dcz")"
expect 1 "$DCZ" train --arch lenet300 --epochs 1 --data fashion-mnist --augment crop+flip -o "$T/bad.dcz"
grep -q "random crops cut boxes out of the images of an image folder" "$T/err" || fail "IDX crop: $(cat "$T/err")"
expect 1 "$DCZ" train --data "$T/imgs" --augment mirror -o "$T/bad.dcz"
grep -q "must be none, flip, crop or crop+flip" "$T/err" || fail "unknown name: $(cat "$T/err")"
expect 1 "$DCZ" prune "$T/plain.dcz" --sparsity 0.5 --augment flip -o "$T/bad.dcz"
grep -q "needs --data" "$T/err" || fail "without data: $(cat "$T/err")"
[ ! -e "$T/bad.dcz" ] || fail "a refused run wrote its output"
echo "ok"
