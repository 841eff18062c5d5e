#!/usr/bin/env bash
# dcz compress --budget: on a small net trained without the validation
# samples, it measures at most the runs it is given, writes the smallest
# file within the budget and a recipe that reproduces it (the same model,
# by hash, and the same stage accuracies); its report names every layer's
# choice and every run; the train record says which samples it held out;
# options that the budget decides, a budget out of range and an output or
# recipe path that cannot be written are refused before any work; a
# variational phase runs once, and its recipe, its KL weight and the
# teacher's share (--distill) included, reproduces the model; each run's file is measured again with 8-bit
# biases and f16 codebooks for the formats not given, taken within.
source "$(dirname "$0")/lib.bash"
D=fashion-mnist
"$DCZ" train --arch mlp:784-32-16-10 --epochs 1 --data $D --seed 4 --threads 1 --validation 2000 -q \
    -o "$T/dense.dcz" || fail "train"
"$DCZ" info "$T/dense.dcz" --json | grep -q "\"validation\":\"2000\"" || fail "the train record names the hold-out"
F="--validation 2000 --rounds 2 --prune-epochs 1 --final-epochs 1 --quant-epochs 1 --threads 1"
"$DCZ" compress "$T/dense.dcz" --data $D --budget 3 --budget-runs 2 $F -o "$T/small.dcz" --json \
    > "$T/b.json" 2> "$T/b.err" || { cat "$T/b.err"; fail "compress --budget"; }
[ -s "$T/small.dcz" ] && [ -s "$T/small.recipe" ] || fail "no output or recipe"
grep -q 'does not say it trained without' "$T/b.err" && fail "a note about a hold-out the input had"
[ "$(json_field within_budget "$T/b.json")" = true ] || fail "not within: $(cat "$T/b.json")"
[ "$(json_field recipe "$T/b.json")" = "$T/small.recipe" ] || fail "recipe path: $(cat "$T/b.json")"
runs=$(grep -o '"candidate":' "$T/b.json" | wc -l)
[ "$runs" -ge 1 ] && [ "$runs" -le 3 ] || fail "$runs runs for --budget-runs 2"
for l in fc1 fc2 fc3; do grep -q "\"name\":\"$l\",\"sparsity\":" "$T/b.json" || fail "no choice for $l"; done
# the file is what the report says: its size, and the validation accuracy
# within 3 points of the input's, reported with its standard error (more
# than 0: the runs change predictions)
bytes=$(json_field file_bytes "$T/b.json")
[ "$(stat -c %s "$T/small.dcz")" = "$bytes" ] || fail "size $(stat -c %s "$T/small.dcz"), reported $bytes"
awk -v a="$(jq .validation_accuracy "$T/b.json")" -v f="$(jq .validation_floor "$T/b.json")" \
    -v i="$(jq .validation_accuracy_input "$T/b.json")" -v m="$(jq .validation_margin "$T/b.json")" \
    'BEGIN { exit !(m > 0 && m < 0.01 && a >= f && f > i - 0.0301 && f < i - 0.0299) }' || fail "accuracy: $(cat "$T/b.json")"
acc=$(json_field accuracy "$T/b.json")
"$DCZ" eval "$T/small.dcz" --data $D --json > "$T/e.json" || fail "eval"
[ "$(json_field accuracy "$T/e.json")" = "$acc" ] || fail "eval $(cat "$T/e.json"), reported $acc"
# --budget-confidence Z: a run is within only when its accuracy is at
# least Z standard errors of its change above the floor; the first run
# (the same candidate as at Z 0, about 8.5 of its standard errors above
# the floor) is above the floor and out at 10
[ "$(jq '.budget_confidence == 0 and .runs[0].within' "$T/b.json")" = true ] || fail "Z 0: $(cat "$T/b.json")"
"$DCZ" compress "$T/dense.dcz" --data $D --budget 3 --budget-runs 2 $F --budget-confidence 10 -o "$T/z.dcz" \
    --json > "$T/z.json" 2> "$T/z.err" || { cat "$T/z.err"; fail "compress --budget-confidence"; }
[ "$(jq .runs[0].candidate "$T/z.json")" = "$(jq .runs[0].candidate "$T/b.json")" ] &&
    [ "$(jq '.budget_confidence == 10 and .runs[0].validation_accuracy >= .validation_floor and
        (.runs[0].within | not)' "$T/z.json")" = true ] || fail "Z 10: $(cat "$T/z.json")"
jq -e '.validation_floor as $f | .budget_confidence as $z | all(.runs[]; if .stopped_after_pruning then
    (.within | not) else .within == (.validation_accuracy - $z * .validation_margin >= $f) end)' \
    "$T/z.json" > /dev/null || fail "within is not the accuracy less Z errors: $(cat "$T/z.json")"
grep -q '^# by 10 standard errors of its change or more (--budget-confidence 10)' "$T/z.recipe" ||
    fail "the recipe does not say: $(cat "$T/z.recipe")"
# the recipe reproduces the model, whatever the command line recorded
grep -q '^sparsity = fc1=' "$T/small.recipe" && grep -q '^bits = fc1=' "$T/small.recipe" &&
    grep -q '^validation = 2000' "$T/small.recipe" || fail "recipe: $(cat "$T/small.recipe")"
(cd "$T" && "$DCZ" compress dense.dcz --data $D --recipe small.recipe -q -o again.dcz) || fail "the recipe"
"$DCZ" info "$T/small.dcz" --json > "$T/i1.json" && "$DCZ" info "$T/again.dcz" --json > "$T/i2.json" || fail "info"
h=$(json_field model_hash "$T/i1.json")
[ ${#h} = 16 ] && [ "$h" = "$(json_field model_hash "$T/i2.json")" ] || fail "model hash $h, again $(json_field model_hash "$T/i2.json")"
[ "$(grep -o '"accuracy":[0-9.]*' "$T/i1.json")" = "$(grep -o '"accuracy":[0-9.]*' "$T/i2.json")" ] ||
    fail "stage accuracies differ"
# the fewest bits that keep accuracy: each run's file is measured again
# with 8-bit biases and f16 codebooks, and those are taken within the
# budget (the recipe above reproduced them); a format given is kept
grep -q '^compress --budget: run 1 with i8 biases and f16 codebooks: .*: taken$' "$T/b.err" ||
    fail "no lighter formats: $(cat "$T/b.err")"
[ "$(jq -r .bias "$T/b.json")" = i8 ] && [ "$(jq -r .codebook "$T/b.json")" = f16 ] &&
    grep -q '^bias = i8$' "$T/small.recipe" && grep -q '^codebook = f16$' "$T/small.recipe" ||
    fail "formats: $(cat "$T/b.json") $(cat "$T/small.recipe")"
"$DCZ" info "$T/small.dcz" --json > "$T/i.json" || fail "info"
[ "$(jq -r '[.layers[] | .bias_encoding // empty] | unique | join(",")' "$T/i.json")" = int8 ] &&
    [ "$(jq -r '[.layers[] | .codebook_format // empty] | unique | join(",")' "$T/i.json")" = f16 ] ||
    fail "the file's biases are not 8-bit or its codebooks not f16: $(cat "$T/i.json")"
# a variational phase: run once before the scan, named in the recipe with
# its KL weight, which reproduces the model through the prune stage
"$DCZ" compress "$T/dense.dcz" --data $D --budget 3 --budget-runs 1 $F --variational 2 --variational-kl 0.5 \
    --distill 0.5 -o "$T/v.dcz" --json \
    > "$T/v.json" 2> "$T/v.err" || { cat "$T/v.err"; fail "compress --budget --variational"; }
grep -q 'epochs of variational dropout, nothing pruned by them' "$T/v.err" || fail "no variational phase: $(cat "$T/v.err")"
[ "$(grep -c 'epochs of variational dropout' "$T/v.err")" = 1 ] || fail "the phase ran more than once"
# the candidates past the scan's most accurate one count among the three
# that one run bisects, not beside them
grep -q '^compress --budget 3: 3 candidates from .*; at most 1 runs$' "$T/v.err" ||
    fail "a variational budget's candidates: $(cat "$T/v.err")"
grep -q '^variational = 2$' "$T/v.recipe" && grep -q '^variational-threshold = off$' "$T/v.recipe" &&
    grep -q '^variational-kl = 0.5$' "$T/v.recipe" && grep -q '^distill = 0.5$' "$T/v.recipe" ||
    fail "recipe: $(cat "$T/v.recipe")"
"$DCZ" info "$T/v.dcz" --json | jq -e '[.stage_details[] | select(.distill == "0.5")] | length == 3' > /dev/null ||
    fail "the records of the phase, prune and quantize do not name the teacher"
(cd "$T" && "$DCZ" compress dense.dcz --data $D --recipe v.recipe -q -o v2.dcz) || fail "the variational recipe"
h=$("$DCZ" info "$T/v.dcz" --json | jq -r .model_hash)
[ "$h" = "$("$DCZ" info "$T/v2.dcz" --json | jq -r .model_hash)" ] || fail "the variational recipe gave another model"
# the text report: the runs and the choice per layer; without --validation
# it measures on the samples the train record names
"$DCZ" compress "$T/dense.dcz" --data $D --budget 3 --budget-runs 1 ${F#--validation 2000 } --budget-recipe "$T/r1" \
    --bias f32 --budget-confidence 0.5 -o "$T/one.dcz" 2> "$T/t.txt" || fail "one run"
grep -q '^plus 0.5 times that (--budget-confidence 0.5))$' "$T/t.txt" || fail "the report does not name Z: $(cat "$T/t.txt")"
grep -q '^compress --budget: run [12] with f32 biases and f16 codebooks: ' "$T/t.txt" &&
    grep -q '^bias = f32$' "$T/r1" || fail "--bias f32 not kept: $(cat "$T/t.txt")"
grep -q '^chosen: run ' "$T/t.txt" && grep -q '^fc2 ' "$T/t.txt" && [ -s "$T/r1" ] || fail "report: $(cat "$T/t.txt")"
# one run: three candidates, the middle one measured first
grep -q '^compress --budget 3: 3 candidates from .*; at most 1 runs$' "$T/t.txt" &&
    grep -q '^compress --budget: run 1, candidate 2 of 3 ' "$T/t.txt" || fail "one run's candidate: $(cat "$T/t.txt")"
grep -q -- 'threshold -1\| -1\.0000' "$T/t.txt" && fail "a threshold of -1 in the report: $(cat "$T/t.txt")"
grep -q ' on 2000 samples held out' "$T/t.txt" && grep -q '^validation = 2000' "$T/r1" ||
    fail "not the train record's hold-out: $(cat "$T/t.txt")"
# dcz train holds out a sixth of the training split by default, at most
# 10000 (Fashion-MNIST: 10000), and the budget then measures on those samples
# without a note; a model that saw them (--validation 0), or that held out
# others, gets a note
"$DCZ" train --arch mlp:784-16-10 --epochs 0 --data $D --threads 1 -o "$T/held.dcz" 2> "$T/h.err" ||
    fail "train 0"
grep -q '10000 of the 60000 training samples held out' "$T/h.err" || fail "no hold-out note: $(cat "$T/h.err")"
"$DCZ" info "$T/held.dcz" --json | grep -q '"validation":"10000"' || fail "the default hold-out is not recorded"
"$DCZ" compress "$T/held.dcz" --data $D --budget 50 --budget-runs 1 ${F#--validation 2000 } -o "$T/u.dcz" \
    2> "$T/u.err" || fail "budget of an untrained net, default hold-out"
grep -q 'does not say it trained without' "$T/u.err" && fail "a note about the default hold-out: $(cat "$T/u.err")"
grep -q ' on 10000 samples held out' "$T/u.err" || fail "not the default hold-out: $(cat "$T/u.err")"
"$DCZ" compress "$T/held.dcz" --data $D --budget 50 --budget-runs 1 $F --bias f16 --codebook f32 -o "$T/u.dcz" \
    2> "$T/u.err" || fail "budget of an untrained net"
grep -q ' with .* biases and .* codebooks: ' "$T/u.err" && fail "lighter formats tried with both given"
grep -q '^bias = f16$' "$T/u.recipe" && grep -q '^codebook = f32$' "$T/u.recipe" || fail "formats: $(cat "$T/u.recipe")"
grep -q 'does not say it trained without these 2000' "$T/u.err" || fail "no note: $(cat "$T/u.err")"
"$DCZ" train --arch mlp:784-16-10 --epochs 0 --data $D --threads 1 --validation 0 -q -o "$T/saw.dcz" ||
    fail "train 0 on all"
"$DCZ" info "$T/saw.dcz" --json | grep -q '"validation":' && fail "a hold-out recorded with --validation 0"
"$DCZ" compress "$T/saw.dcz" --data $D --budget 50 --budget-runs 1 ${F#--validation 2000 } -o "$T/u.dcz" \
    2> "$T/u.err" || fail "budget of an untrained net that saw the samples"
grep -q 'does not say it trained without these 10000' "$T/u.err" || fail "no note: $(cat "$T/u.err")"
# refused before any work
for bad in "--sparsity 0.9" "--bits 4" "--quality 1" "--keep-stages $T" "--dry-run"; do
    expect 1 "$DCZ" compress "$T/dense.dcz" --data $D --budget 1 $bad -o "$T/x.dcz"
    grep -q 'does not go with it' "$T/err" || fail "$bad: $(cat "$T/err")"
done
expect 1 "$DCZ" compress "$T/dense.dcz" --data $D --budget 0 -o "$T/x.dcz"
expect 1 "$DCZ" compress "$T/dense.dcz" --data $D --budget 1 --budget-runs 0 -o "$T/x.dcz"
expect 1 "$DCZ" compress "$T/dense.dcz" --data $D --budget 1 --validation 0 -o "$T/x.dcz"
expect 1 "$DCZ" compress "$T/dense.dcz" --data $D --budget-recipe "$T/r" -o "$T/x.dcz"
expect 1 "$DCZ" compress "$T/dense.dcz" --data $D --budget-confidence 1 -o "$T/x.dcz"
for z in -1 11 nan; do expect 1 "$DCZ" compress "$T/dense.dcz" --data $D --budget 1 --budget-confidence $z -o "$T/x.dcz"; done
expect 1 "$DCZ" compress "$T/dense.dcz" --data $D --budget 1 --validation 60000 -o "$T/x.dcz"
expect 3 "$DCZ" compress "$T/dense.dcz" --data $D --budget 1 --budget-recipe "$T/no/such/r" -o "$T/x.dcz"
grep -q "no/such/r" "$T/err" || fail "recipe path: $(cat "$T/err")"
[ ! -e "$T/x.dcz" ] || fail "an output after a refusal"
