#!/usr/bin/env bash
# Distillation (--distill W, --temperature T): prune, quantize and compress
# retrain from the input model's softened outputs as well as the labels;
# their stage records say so (distill, temperature), the same command gives
# the same file byte for byte, and every path that trains (plain and
# sharded steps, quantize's fine-tuning, the variational phase) gives
# another model than without it; out-of-range values (also those that
# round to 0 in float),
# --temperature without --distill, --distill without --data and --distill
# with --head are refused before any work. (The loss and its gradient are
# checked against finite differences in tests/unit/test_train.c.)
source "$(dirname "$0")/lib.bash"
if [ ! -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    echo "SKIP: Debian's dataset-fashion-mnist is not installed"
    exit 0
fi
D=$(fmnist_part 600 200)
details() { "$DCZ" info "$1" --json | jq -c '.stage_details'; }
"$DCZ" train --arch mlp:784-32-10 --epochs 2 --data "$D" --seed 3 --threads 1 -q -o "$T/dense.dcz" || fail "train"
P="--sparsity 0.9 --rounds 1 --prune-epochs 1 --final-epochs 2 --threads 1"

# recorded, reproducible to the byte, another model than without
"$DCZ" prune "$T/dense.dcz" --data "$D" $P --distill 0.7 -q -o "$T/d.dcz" || fail "prune --distill"
cp "$T/d.dcz" "$T/d1.dcz"
details "$T/d1.dcz" | jq -e '.[-1] | .stage == "prune" and .distill == "0.7" and .temperature == "4"' > /dev/null ||
    fail "the prune record: $(details "$T/d1.dcz")"
"$DCZ" prune "$T/dense.dcz" --data "$D" $P --distill 0.7 -q -o "$T/d.dcz" || fail "prune --distill again"
cmp -s "$T/d.dcz" "$T/d1.dcz" || fail "the same command, another file"
"$DCZ" prune "$T/dense.dcz" --data "$D" $P -q -o "$T/plain.dcz" || fail "prune"
details "$T/plain.dcz" | jq -e '.[-1] | has("distill") | not' > /dev/null || fail "distill recorded without --distill"
[ "$(model_hash "$T/plain.dcz")" != "$(model_hash "$T/d1.dcz")" ] || fail "--distill changed nothing"
"$DCZ" prune "$T/dense.dcz" --data "$D" $P --distill 0.7 --temperature 2 -q -o "$T/t2.dcz" || fail "--temperature 2"
[ "$(model_hash "$T/t2.dcz")" != "$(model_hash "$T/d1.dcz")" ] || fail "--temperature changed nothing"

# every path that trains takes the teacher: sharded steps (each part on
# its own samples), quantize's fine-tuning, the variational phase (whose
# update is its own); each gives another model than without it
for path in "prune --shards 2" "quantize --bits 3 --quant-epochs 1" "prune --variational 1 --variational-threshold off"; do
    set -- $path
    verb=$1; shift
    in="$T/dense.dcz"; [ "$verb" = quantize ] && in="$T/plain.dcz"
    opts="$P"; [ "$verb" = quantize ] && opts="--threads 1"
    # the variational phase alone: nothing after it trains
    [ "$1" = --variational ] && opts="--sparsity 0 --rounds 1 --prune-epochs 0 --final-epochs 0 --threads 1"
    "$DCZ" $verb "$in" --data "$D" $opts "$@" -q -o "$T/w.dcz" || fail "$path"
    "$DCZ" $verb "$in" --data "$D" $opts "$@" --distill 0.5 -q -o "$T/wd.dcz" || fail "$path --distill"
    [ "$(model_hash "$T/w.dcz")" != "$(model_hash "$T/wd.dcz")" ] || fail "$path: --distill changed nothing"
done

# quantize's record, and both stages of compress
"$DCZ" quantize "$T/d1.dcz" --data "$D" --bits 3 --quant-epochs 1 --distill 0.5 --temperature 2 --threads 1 -q \
    -o "$T/q.dcz" || fail "quantize --distill"
details "$T/q.dcz" | jq -e '.[-1] | .stage == "quantize" and .distill == "0.5" and .temperature == "2"' > /dev/null ||
    fail "the quantize record: $(details "$T/q.dcz")"
"$DCZ" compress "$T/dense.dcz" --data "$D" $P --bits 4 --quant-epochs 1 --distill 0.5 -q -o "$T/c.dcz" ||
    fail "compress --distill"
[ "$(details "$T/c.dcz" | jq '[.[] | select(.distill == "0.5")] | length')" = 2 ] ||
    fail "compress: prune and quantize records: $(details "$T/c.dcz")"

# refused before any work
for bad in "--distill 1.5" "--distill -0.1" "--distill 1e-50" "--distill 0.5 --temperature 0" \
           "--distill 0.5 --temperature 1e-50" "--temperature 2"; do
    expect 1 "$DCZ" prune "$T/dense.dcz" --data "$D" $P $bad -o "$T/x.dcz"
    grep -q -- "--distill\|--temperature" "$T/err" || fail "$bad: $(cat "$T/err")"
done
expect 1 "$DCZ" prune "$T/dense.dcz" --sparsity 0.5 --distill 0.5 -o "$T/x.dcz"
grep -q 'give --data' "$T/err" || fail "--distill without --data: $(cat "$T/err")"
expect 1 "$DCZ" compress "$T/dense.dcz" --data "$D" --head 10 --distill 0.5 -o "$T/x.dcz"
grep -q -- '--head replaces' "$T/err" || fail "--distill with --head: $(cat "$T/err")"
[ ! -e "$T/x.dcz" ] || fail "a refused run wrote its output"
echo "ok"
