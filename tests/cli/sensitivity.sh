#!/usr/bin/env bash
# dcz sensitivity: per layer, accuracy with that layer alone pruned to each
# sparsity and shared with each codebook width, on a fixed validation
# split of the training data: the table and JSON name every weighted layer
# and level, the same run gives the same numbers and another seed the same
# split (the same pruned accuracies), sparsities a layer already has give
# the baseline, the split is by default the one the model trained without,
# a model that saw it gets a note, a scan by blocks of 4 (--block) gives
# other pruned accuracies, and bad levels and blocks, a validation split as
# large as the data, and a missing
# --data are usage errors.
source "$(dirname "$0")/lib.bash"
D=fashion-mnist
"$DCZ" train --arch mlp:784-32-16-10 --epochs 1 --data $D --seed 4 --threads 1 -q -o "$T/dense.dcz" || fail "train"
"$DCZ" prune "$T/dense.dcz" --sparsity fc1=0.6 --threads 1 -q -o "$T/p.dcz" || fail "prune"
S="--sparsity-levels 0.5,0.9,0.99 --bits-levels 1,3 --validation 2000 --threads 1"
"$DCZ" sensitivity "$T/p.dcz" --data $D $S --json > "$T/a.json" || fail "sensitivity"
"$DCZ" sensitivity "$T/p.dcz" --data $D $S --json > "$T/b.json" || fail "sensitivity again"
cmp -s "$T/a.json" "$T/b.json" || fail "same seed, other numbers"
"$DCZ" sensitivity "$T/p.dcz" --data $D $S --seed 2 --json > "$T/c.json" || fail "another seed"
[ "$(json_field validation_samples "$T/a.json")" = 2000 ] || fail "validation samples: $(cat "$T/a.json")"
grep -q '"sparsity_levels":\[0.5,0.9,0.99\],"bits_levels":\[1,3\]' "$T/a.json" || fail "levels: $(cat "$T/a.json")"
# arr FILE LAYER KEY: the numbers of that layer's array
arr() { tr '{' '\n' < "$1" | grep "\"name\":\"$2\"" | sed "s/.*\"$3\":\\[\\([^]]*\\)\\].*/\\1/" | tr ',' ' '; }
base=$(json_field baseline "$T/a.json")
[ "$(grep -o '"name":"[a-z0-9]*"' "$T/a.json" | tr '\n' ' ')" = '"name":"fc1" "name":"fc2" "name":"fc3" ' ] ||
    fail "layers: $(cat "$T/a.json")"
tr '{' '\n' < "$T/a.json" | grep -q '"name":"fc1","weights":25088,"density":0.400' || fail "fc1 density"
read -r p50 p90 p99 <<< "$(arr "$T/a.json" fc1 pruned_accuracy)"
# fc1 is already 60% sparse: pruning it to 50% changes nothing
[ "$p50" = "$base" ] || fail "fc1 at 50%: $p50, baseline $base"
for l in fc1 fc2 fc3; do
    read -r a b c <<< "$(arr "$T/a.json" $l pruned_accuracy)"
    [ -n "$c" ] && awk -v x="$c" -v b="$base" 'BEGIN { exit !(x < b) }' || fail "$l pruned to 99%: $c, baseline $base"
    read -r s1 s3 extra <<< "$(arr "$T/a.json" $l shared_accuracy)"
    [ -n "$s3" ] && [ -z "$extra" ] || fail "$l: shared accuracies $s1 $s3 $extra"
done
read -r s1 s3 <<< "$(arr "$T/a.json" fc1 shared_accuracy)"
awk -v x="$s1" -v b="$base" 'BEGIN { exit !(x < b) }' || fail "fc1 shared with 1 bit: $s1, baseline $base"
# another seed holds out the same samples: pruning is deterministic
[ "$(json_field baseline "$T/c.json")" = "$base" ] &&
    [ "$(arr "$T/c.json" fc2 pruned_accuracy)" = "$(arr "$T/a.json" fc2 pruned_accuracy)" ] || fail "seed 2"
"$DCZ" sensitivity "$T/p.dcz" --data $D $S > "$T/t.txt" || fail "table"
grep -q 'on 2000 validation samples held out of the training split' "$T/t.txt" && grep -q '^fc3 ' "$T/t.txt" ||
    fail "table: $(cat "$T/t.txt")"
# without --validation: the samples the train record says the model trained
# without, else a sixth of the training split, at most 10000
L="--sparsity-levels 0.9 --bits-levels 2 --threads 1 --json"
"$DCZ" train --arch mlp:784-16-10 --epochs 0 --data $D --threads 1 --validation 3000 -q -o "$T/v.dcz" || fail "train 0"
"$DCZ" sensitivity "$T/v.dcz" --data $D $L > "$T/v.json" || fail "sensitivity of v"
"$DCZ" sensitivity "$T/p.dcz" --data $D $L > "$T/p.json" || fail "sensitivity of p"
[ "$(json_field validation_samples "$T/v.json")" = 3000 ] && [ "$(json_field validation_samples "$T/p.json")" = 10000 ] ||
    fail "default validation samples: $(cat "$T/v.json" "$T/p.json")"
# a model whose train record does not name these samples saw them: a note,
# none where it does (p.dcz held out 10000, dcz train's default)
"$DCZ" train --arch mlp:784-16-10 --epochs 0 --data $D --threads 1 --validation 0 -q -o "$T/saw.dcz" || fail "train 0"
"$DCZ" sensitivity "$T/saw.dcz" --data $D $L > /dev/null 2> "$T/saw.err" || fail "sensitivity of saw"
grep -q "saw.dcz's train record does not say it trained without these 10000" "$T/saw.err" ||
    fail "no note: $(cat "$T/saw.err")"
"$DCZ" sensitivity "$T/p.dcz" --data $D $L > /dev/null 2> "$T/p.err" || fail "sensitivity of p"
grep -q 'does not say' "$T/p.err" && fail "a note on the default hold-out: $(cat "$T/p.err")"
expect 1 "$DCZ" sensitivity "$T/p.dcz" --data $D --sparsity-levels 0.9,0.5
expect 1 "$DCZ" sensitivity "$T/p.dcz" --data $D --sparsity-levels 0.5,x
expect 1 "$DCZ" sensitivity "$T/p.dcz" --data $D --bits-levels 4,9
expect 1 "$DCZ" sensitivity "$T/p.dcz" --data $D --bits-levels 2,3,
expect 1 "$DCZ" sensitivity "$T/p.dcz" --data $D --bits-levels 1e10
# by blocks of 4 inputs (prune --block): other pruned accuracies, the same
# baseline and sharing; blocks out of range refused
"$DCZ" sensitivity "$T/p.dcz" --data $D $S --block 4 --json > "$T/k.json" || fail "sensitivity --block 4"
[ "$(json_field block "$T/k.json")" = 4 ] && [ "$(json_field block "$T/a.json")" = 1 ] &&
    [ "$(json_field baseline "$T/k.json")" = "$base" ] &&
    [ "$(arr "$T/k.json" fc2 shared_accuracy)" = "$(arr "$T/a.json" fc2 shared_accuracy)" ] &&
    [ "$(arr "$T/k.json" fc2 pruned_accuracy)" != "$(arr "$T/a.json" fc2 pruned_accuracy)" ] ||
    fail "by blocks: $(arr "$T/k.json" fc2 pruned_accuracy) against $(arr "$T/a.json" fc2 pruned_accuracy)"
expect 1 "$DCZ" sensitivity "$T/p.dcz" --data $D --block 0
grep -q -- '--block' "$T/err" || fail "--block 0: $(cat "$T/err")"
expect 1 "$DCZ" plot "$T/p.dcz" --kind waterfall --block 4 -o "$T/x.svg"
expect 1 "$DCZ" sensitivity "$T/p.dcz" --data $D --validation 60000
grep -q 'the training split has 60000 samples' "$T/err" || fail "validation too large: $(cat "$T/err")"
expect 1 "$DCZ" sensitivity "$T/p.dcz"
expect 1 "$DCZ" sensitivity "$T/p.dcz" --data $D -o "$T/x"
