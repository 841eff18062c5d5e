#!/usr/bin/env bash
# --shards: the same number of shards gives the same model (by hash) run
# after run and for any thread count, 1 shard is the plain step, more
# shards another model; the verbs that retrain take it; bad counts are
# usage errors.
source "$(dirname "$0")/lib.bash"
D=$(fmnist_part 12000 2000)   # a fifth of the training split, enough to learn from
A="--arch cnn:c4k3-p2-f10 --epochs 1 --data $D --threads 1 -q"
"$DCZ" train $A --shards 3 -o "$T/a.dcz" || fail "train --shards 3"
"$DCZ" train $A --shards 3 -o "$T/b.dcz" || fail "again"
"$DCZ" train $A --shards 1 -o "$T/one.dcz" || fail "--shards 1"
"$DCZ" train $A -o "$T/plain.dcz" || fail "no --shards"
[ -n "$(model_hash "$T/a.dcz")" ] && [ "$(model_hash "$T/a.dcz")" = "$(model_hash "$T/b.dcz")" ] || fail "3 shards twice differ"
[ "$(model_hash "$T/one.dcz")" = "$(model_hash "$T/plain.dcz")" ] || fail "1 shard is not the plain step"
[ "$(model_hash "$T/a.dcz")" != "$(model_hash "$T/plain.dcz")" ] || fail "3 shards gave the plain step's model"
# parts of 21 and 22 samples: 1 thread and 3 train the same model (the
# products' OpenBLAS calls follow from their shapes, not the threads)
M="--arch mlp:784-64-10 --epochs 1 --data $D --shards 3 -q"
"$DCZ" train $M --threads 1 -o "$T/m1.dcz" && "$DCZ" train $M --threads 3 -o "$T/m3.dcz" || fail "train mlp --shards 3"
[ "$(model_hash "$T/m1.dcz")" = "$(model_hash "$T/m3.dcz")" ] || fail "--shards 3: 1 thread and 3 trained other models"
"$DCZ" compress "$T/a.dcz" --data $D --shards 2 --rounds 1 --prune-epochs 1 --final-epochs 0 --quant-epochs 1 \
    --threads 1 -q -o "$T/c.dcz" || fail "compress --shards 2"
"$DCZ" eval "$T/c.dcz" --data $D -q > /dev/null || fail "eval"
for bad in -1 1025; do
    expect 1 "$DCZ" train $A --shards $bad -o "$T/x.dcz"
    grep -q -- '--shards must be from 1 to 1024' "$T/err" || fail "--shards $bad: $(cat "$T/err")"
done
expect 1 "$DCZ" eval "$T/a.dcz" --data $D --shards 2
