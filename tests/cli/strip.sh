#!/usr/bin/env bash
# --strip on every verb that writes a .dcz (train, import, prune, quantize,
# encode, compress with its --keep-stages files, calibrate): the file holds
# no stage records, every part but the records, the section table and the
# padding is that of the same run without --strip, and it is smaller by the
# records, their 32-byte table entry and the padding that moved; it is the
# same model (model hash, dcz run's outputs bit for bit, dcz eval's
# accuracy, which is what the verb reported); a --strip dry run predicts the
# stripped size; readers of records say what a stripped file cannot tell
# them (info, plot --kind waterfall, compress --budget, whose recipe
# carries --strip); calibrate --strip without -o is a usage error.
source "$(dirname "$0")/lib.bash"
D=$(fmnist_part 12000 2000)   # a fifth of the training split, enough to learn from
V1=$ROOT/tests/fixtures/v1
gzip -dc "$ROOT/tests/fixtures/onnx/inputs.f32.gz" > "$T/x.f32"   # the first 100 test images

# same_model WHAT FULL BARE: BARE is FULL without its records
same_model() {
    local what=$1 full=$2 bare=$3
    "$DCZ" info "$full" --json > "$T/f.json" && "$DCZ" info "$bare" --json > "$T/b.json" || fail "$what: info"
    [ "$(jq .stage_records "$T/b.json") $(jq -c .stages "$T/b.json")" = "0 []" ] ||
        fail "$what: records in the stripped file: $(jq -c .stages "$T/b.json")"
    [ "$(jq .stage_records "$T/f.json")" -ge 1 ] || fail "$what: no records without --strip"
    [ "$(jq -r .model_hash "$T/f.json")" = "$(jq -r .model_hash "$T/b.json")" ] || fail "$what: another model"
    local keep='.bytes_by_part | del(.header, .stages, .padding)'
    [ "$(jq -c "$keep" "$T/f.json")" = "$(jq -c "$keep" "$T/b.json")" ] ||
        fail "$what: parts $(jq -c .bytes_by_part "$T/f.json") and stripped $(jq -c .bytes_by_part "$T/b.json")"
    local sf sb hf hb rf pf pb
    sf=$(stat -c %s "$full"); sb=$(stat -c %s "$bare")
    hf=$(jq .bytes_by_part.header "$T/f.json"); hb=$(jq .bytes_by_part.header "$T/b.json")
    rf=$(jq .bytes_by_part.stages "$T/f.json")
    pf=$(jq .bytes_by_part.padding "$T/f.json"); pb=$(jq .bytes_by_part.padding "$T/b.json")
    [ "$(jq .bytes_by_part.stages "$T/b.json")" = 0 ] && [ $((hb + 32)) = "$hf" ] || fail "$what: header $hf, $hb"
    [ "$rf" -gt 0 ] && [ $((sf - sb)) = $((rf + 32 + pf - pb)) ] ||
        fail "$what: $sf bytes, $sb stripped: not the records ($rf), their entry and padding ($pf, $pb)"
    # the padding moves by the entry (32 bytes, the first section's start) and
    # the records' own padding (under 64 bytes)
    [ $((pf - pb)) -ge -32 ] && [ $((pf - pb)) -lt 96 ] || fail "$what: padding $pf, stripped $pb"
    [ "$(jq .file_bytes "$T/b.json")" = "$sb" ] || fail "$what: file_bytes"
    "$DCZ" run -q "$full" --raw "$T/x.f32" --shape 100,784 -o "$T/yf.f32" > /dev/null &&
        "$DCZ" run -q "$bare" --raw "$T/x.f32" --shape 100,784 -o "$T/yb.f32" > /dev/null || fail "$what: run"
    cmp -s "$T/yf.f32" "$T/yb.f32" || fail "$what: the stripped file runs to other outputs"
}
# reported WHAT JSON FILE: the accuracy the verb reported is dcz eval's on FILE
reported() {
    "$DCZ" eval -q "$3" --data $D --json > "$T/e.json" || fail "$1: eval"
    [ "$(json_field accuracy "$2")" = "$(json_field accuracy "$T/e.json")" ] ||
        fail "$1: reported $(json_field accuracy "$2"), eval says $(json_field accuracy "$T/e.json")"
    [ "$(json_field file_bytes "$2")" = "$(stat -c %s "$3")" ] || fail "$1: reported $(json_field file_bytes "$2") bytes"
}

# train
TR="--arch mlp:784-16-10 --epochs 1 --data $D --seed 3 --threads 1 -q --json"
"$DCZ" train $TR -o "$T/dense.dcz" > "$T/t1.json" || fail "train"
"$DCZ" train $TR --strip -o "$T/dense-s.dcz" > "$T/t2.json" || fail "train --strip"
same_model train "$T/dense.dcz" "$T/dense-s.dcz"
reported train "$T/t2.json" "$T/dense-s.dcz"
# import
"$DCZ" import "$ROOT/tests/fixtures/onnx/cnn.onnx" -q -o "$T/imp.dcz" || fail "import"
"$DCZ" import "$ROOT/tests/fixtures/onnx/cnn.onnx" --strip -q -o "$T/imp-s.dcz" || fail "import --strip"
same_model import "$T/imp.dcz" "$T/imp-s.dcz"
# prune, quantize without data (a file with records in, none out)
"$DCZ" prune "$T/dense.dcz" --sparsity 'fc1=0.9,fc2=0.5' -q -o "$T/p.dcz" || fail "prune"
"$DCZ" prune "$T/dense.dcz" --sparsity 'fc1=0.9,fc2=0.5' --strip -q -o "$T/p-s.dcz" || fail "prune --strip"
same_model prune "$T/p.dcz" "$T/p-s.dcz"
"$DCZ" quantize "$T/p.dcz" --bits 4 -q -o "$T/q.dcz" || fail "quantize"
"$DCZ" quantize "$T/p.dcz" --bits 4 --strip -q -o "$T/q-s.dcz" || fail "quantize --strip"
same_model quantize "$T/q.dcz" "$T/q-s.dcz"
# encode, with its accuracy measured; a dry run predicts the stripped bytes
"$DCZ" encode "$T/q.dcz" --data $D -q --json -o "$T/e.dcz" > "$T/e1.json" || fail "encode"
"$DCZ" encode "$T/q.dcz" --data $D --strip -q --json -o "$T/e-s.dcz" > "$T/e2.json" || fail "encode --strip"
same_model encode "$T/e.dcz" "$T/e-s.dcz"
reported encode "$T/e2.json" "$T/e-s.dcz"
[ "$(json_field accuracy "$T/e1.json")" = "$(json_field accuracy "$T/e2.json")" ] || fail "encode: another accuracy"
"$DCZ" encode "$T/q.dcz" --dry-run --strip --json > "$T/dry.json" || fail "encode --dry-run --strip"
[ "$(json_field file_bytes "$T/dry.json")" = "$(stat -c %s "$T/e-s.dcz")" ] ||
    fail "dry run: $(json_field file_bytes "$T/dry.json") bytes, the stripped file has $(stat -c %s "$T/e-s.dcz")"
# calibrate
C="--data $D --calib-batches 1 --batch 100 -q --json"
"$DCZ" calibrate "$T/e.dcz" $C -o "$T/c.dcz" > "$T/c1.json" || fail "calibrate"
"$DCZ" calibrate "$T/e.dcz" $C --strip -o "$T/c-s.dcz" > "$T/c2.json" || fail "calibrate --strip"
same_model calibrate "$T/c.dcz" "$T/c-s.dcz"
reported calibrate "$T/c2.json" "$T/c-s.dcz"
expect 1 "$DCZ" calibrate "$T/e.dcz" --data $D --compare --strip
grep -q 'give -o OUT' "$T/err" || fail "calibrate --strip without -o: $(cat "$T/err")"
# compress: every file it writes
F="--data $D --rounds 1 --prune-epochs 0 --final-epochs 0 --quant-epochs 0 --threads 1 -q --json"
mkdir -p "$T/k1" "$T/k2"
"$DCZ" compress "$T/dense.dcz" $F --keep-stages "$T/k1" -o "$T/z.dcz" > "$T/z1.json" || fail "compress"
"$DCZ" compress "$T/dense.dcz" $F --keep-stages "$T/k2" --strip -o "$T/z-s.dcz" > "$T/z2.json" || fail "compress --strip"
same_model compress "$T/z.dcz" "$T/z-s.dcz"
reported compress "$T/z2.json" "$T/z-s.dcz"
for s in prune quantize; do same_model "compress --keep-stages $s" "$T/k1/$s.dcz" "$T/k2/$s.dcz"; done
[ "$(jq -c '[.stages[] | select(.stage != "input") | .file_bytes]' "$T/z2.json")" = \
  "[$(stat -c %s "$T/k2/prune.dcz"),$(stat -c %s "$T/k2/quantize.dcz"),$(stat -c %s "$T/z-s.dcz")]" ] ||
    fail "compress --strip: stage sizes $(jq -c .stages "$T/z2.json")"

# readers of records on a stripped file
"$DCZ" info "$T/z-s.dcz" | grep -q '^no stage records' || fail "info does not say the file holds no records"
if "$DCZ" plot --help > /dev/null 2>&1; then
    expect 2 "$DCZ" plot "$T/z-s.dcz" --kind waterfall -o "$T/w.png"
    grep -q 'holds no stage records' "$T/err" || fail "plot: $(cat "$T/err")"
    [ -e "$T/w.png" ] && fail "plot wrote a figure"
fi
"$DCZ" compress "$T/dense-s.dcz" --data $D --budget 50 --budget-runs 1 --validation 500 --rounds 1 --prune-epochs 0 \
    --final-epochs 0 --quant-epochs 0 --threads 1 --strip -o "$T/bud.dcz" 2> "$T/bud.err" > /dev/null ||
    { cat "$T/bud.err"; fail "compress --budget of a stripped file"; }
grep -q 'holds no stage records .*cannot be told' "$T/bud.err" || fail "no note on the hold-out: $(cat "$T/bud.err")"
grep -q 'does not say it trained without' "$T/bud.err" && fail "the note of a file with records"
grep -qx 'strip = true' "$T/bud.recipe" || fail "the recipe does not carry --strip: $(cat "$T/bud.recipe")"
[ "$("$DCZ" info "$T/bud.dcz" --json | jq .stage_records)" = 0 ] || fail "compress --budget --strip kept records"
echo "strip ok"
