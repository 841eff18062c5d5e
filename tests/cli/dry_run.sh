#!/usr/bin/env bash
# --dry-run on prune, quantize, encode and compress: each prints the bytes
# the same command would write, per layer and in total, and writes nothing
# (no output file, an existing one untouched, no --keep-stages files), after
# reading and checking the data as the run would.
# encode's prediction is exact, with and without --data; prune, quantize
# and compress run their stages without retraining and must land within
# 10% of the real run's file (the real runs retrain on Fashion-MNIST).
source "$(dirname "$0")/lib.bash"
D=$(fmnist_part 12000 2000)   # a fifth of the training split, enough to learn from
"$DCZ" train --arch mlp:784-64-32-10 --epochs 1 --data $D --seed 3 --threads 1 -q -o "$T/dense.dcz" || fail "train"
"$DCZ" prune "$T/dense.dcz" --sparsity 0.9 --threads 1 -q -o "$T/p1.dcz" || fail "one-shot prune"
"$DCZ" quantize "$T/p1.dcz" --threads 1 -q -o "$T/q1.dcz" || fail "k-means"

within() {  # NAME PREDICTED REAL PERCENT
    awk -v p="$2" -v r="$3" -v l="$4" 'BEGIN { d = (p - r) / r; if (d < 0) d = -d; exit !(r > 0 && d * 100 <= l) }' ||
        fail "$1: predicted $2 bytes, the run wrote $3 (more than $4% apart)"
    echo "$1: predicted $2, wrote $3"
}
# dry RUN: the command with --dry-run and --json; prints its file_bytes
dry() { "$DCZ" "$@" --dry-run -q --json 2> /dev/null > "$T/dry.json" || fail "dry run: $*"; json_field file_bytes "$T/dry.json"; }
real() { "$DCZ" "$@" -q --json > "$T/real.json" || fail "run: $*"; json_field file_bytes "$T/real.json"; }

# encode: exact, without and with --data; nothing written
for data in "" "--data $D"; do
    p=$(dry encode "$T/q1.dcz" $data -o "$T/e.dcz")
    [ -e "$T/e.dcz" ] && fail "encode --dry-run wrote its output"
    grep -q '"dry_run":true,"exact":true' "$T/dry.json" || fail "encode dry run not marked exact: $(cat "$T/dry.json")"
    r=$(real encode "$T/q1.dcz" $data -o "$T/e.dcz")
    [ "$p" = "$r" ] && [ "$r" = "$(stat -c %s "$T/e.dcz")" ] || fail "encode $data: predicted $p bytes, wrote $r"
    rm -f "$T/e.dcz"
done
# the per-layer bytes add up with the overhead to the total
awk -F'"bytes":' '{ s = 0; for (i = 2; i <= NF; i++) s += $i + 0; print s }' "$T/dry.json" > "$T/sum"
o=$(json_field overhead_bytes "$T/dry.json")
[ $(( $(cat "$T/sum") + o )) = "$p" ] || fail "layers ($(cat "$T/sum")) + overhead ($o) != $p"

# an existing output is left as it was
echo keep > "$T/kept.dcz"
"$DCZ" encode "$T/q1.dcz" --dry-run -q -o "$T/kept.dcz" || fail "dry run over an existing output"
[ "$(cat "$T/kept.dcz")" = keep ] || fail "a dry run changed its output file"
# the data is read and checked as the run would: missing data is an error
expect 2 "$DCZ" prune "$T/dense.dcz" --data "$T/none" --sparsity 0.9 --dry-run
expect 2 "$DCZ" compress "$T/dense.dcz" --data "$T/none" --dry-run
# the human report names the layers and says it wrote nothing; -o is optional
"$DCZ" prune "$T/dense.dcz" --sparsity 0.9 --dry-run > "$T/report.txt" 2> /dev/null || fail "dry run without -o"
grep -q 'nothing written' "$T/report.txt" && grep -q '^fc2 ' "$T/report.txt" && grep -q '^total ' "$T/report.txt" ||
    fail "dry-run report: $(cat "$T/report.txt")"
grep -q '"exact":true' <("$DCZ" prune "$T/dense.dcz" --sparsity 0.9 --dry-run --json 2> /dev/null) && fail "prune's estimate marked exact"

# prune and quantize with retraining: within 10%
P="--sparsity fc1=0.92,fc2=0.85,fc3=0.6 --rounds 2 --prune-epochs 1 --final-epochs 1 --threads 1"
within prune "$(dry prune "$T/dense.dcz" --data $D $P -o "$T/p.dcz")" "$(real prune "$T/dense.dcz" --data $D $P -o "$T/p.dcz")" 10
within quantize "$(dry quantize "$T/p.dcz" --data $D --quant-epochs 1 --threads 1 -o "$T/q.dcz")" \
    "$(real quantize "$T/p.dcz" --data $D --quant-epochs 1 --threads 1 -o "$T/q.dcz")" 10

# compress: the file and each stage within 10%; no stage files
mkdir "$T/stages"
C="--sparsity fc1=0.92,fc2=0.85,fc3=0.6 --rounds 2 --prune-epochs 1 --final-epochs 1 --quant-epochs 1 --threads 1"
p=$(dry compress "$T/dense.dcz" --data $D $C --keep-stages "$T/stages" -o "$T/c.dcz")
cp "$T/dry.json" "$T/cdry.json"
[ -e "$T/c.dcz" ] || [ -n "$(ls "$T/stages")" ] && fail "compress --dry-run wrote files"
r=$(real compress "$T/dense.dcz" --data $D $C --keep-stages "$T/stages" -o "$T/c.dcz")
within compress "$p" "$r" 10
for s in prune quantize; do
    sp=$(tr '{' '\n' < "$T/cdry.json" | grep "\"stage\":\"$s\"" | sed 's/.*"file_bytes":\([0-9]*\).*/\1/')
    within "compress, $s stage" "$sp" "$(stat -c %s "$T/stages/$s.dcz")" 10
done
