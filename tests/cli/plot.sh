#!/usr/bin/env bash
# dcz plot: every kind writes a valid PNG of the size asked for (its
# signature and IHDR; dcz's own PNG reader decodes it, and dcz run refuses
# it only for its size), the weights kind takes the files of several
# stages, and wrong kinds, layers, sizes, a missing --layer and data given
# to a kind that reads none are usage errors that write nothing; the
# calibration kind's legend tells its thresholds apart (test_plot checks
# that its lines lie inside the frame).
source "$(dirname "$0")/lib.bash"
D=fashion-mnist
"$DCZ" train --arch mlp:784-32-16-10 --epochs 1 --data $D --seed 5 --threads 1 -q -o "$T/dense.dcz" || fail "train"
"$DCZ" compress "$T/dense.dcz" --data $D --rounds 1 --prune-epochs 0 --final-epochs 0 --quant-epochs 0 --threads 1 \
    --keep-stages "$T" -q -o "$T/c.dcz" || fail "compress"
# png_size FILE: "WIDTHxHEIGHT" from the PNG header, or nothing for another file
png_size() {
    [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || return 0
    [ "$(head -c 16 "$1" | tail -c 4)" = IHDR ] || return 0
    local b; b=($(head -c 24 "$1" | tail -c 8 | od -An -tu1))
    echo "$(( (b[0] << 24) + (b[1] << 16) + (b[2] << 8) + b[3] ))x$(( (b[4] << 24) + (b[5] << 16) + (b[6] << 8) + b[7] ))"
}
S="--width 640 --height 480"
check() {  # NAME ARGS...: plots into $T/NAME.png and checks it
    local name=$1; shift
    "$DCZ" plot "$@" $S -q -o "$T/$name.png" || fail "plot $name"
    [ "$(png_size "$T/$name.png")" = 640x480 ] || fail "$name: not a 640x480 PNG ($(png_size "$T/$name.png"))"
    echo "$name: 640x480 PNG, $(stat -c %s "$T/$name.png") bytes"
}
check weights "$T/dense.dcz" "$T/prune.dcz" "$T/quantize.dcz" "$T/c.dcz" --kind weights --layer fc1
check sparsity "$T/c.dcz" --kind sparsity --layer fc2
check waterfall "$T/c.dcz" --kind waterfall
check sensitivity "$T/c.dcz" --kind sensitivity --data $D --validation 500 --sparsity-levels 0.5,0.9,0.99
check sharing "$T/c.dcz" --kind sharing --data $D --validation 500 --bits-levels 1,2,4
check calibration "$T/c.dcz" --kind calibration --layer fc2 --data $D
# the calibration legend prints the thresholds with the digits that tell
# them apart: fc1 reads pixels, where minmax takes 1 and mse about 0.9995
"$DCZ" plot "$T/dense.dcz" --kind calibration --layer fc1 --data $D --json -q -o "$T/cal.png" > "$T/cal.json" ||
    fail "calibration --json"
[ "$(jq '.thresholds | length' "$T/cal.json")" = 4 ] || fail "thresholds: $(cat "$T/cal.json")"
values=$(jq -r '.thresholds[].threshold' "$T/cal.json" | sort -u | wc -l)
shown=$(jq -r '.thresholds[].label' "$T/cal.json" | sed 's/^[^:]*: \([^ ,]*\).*/\1/' | sort -u | wc -l)
[ "$values" -ge 2 ] && [ "$shown" = "$values" ] || fail "$values thresholds shown as $shown numbers: $(cat "$T/cal.json")"
# the figure is an image dcz itself decodes
"$DCZ" run "$T/c.dcz" "$T/weights.png" > /dev/null 2> "$T/err" && fail "a 640x480 figure ran as a 28x28 sample"
grep -q 'the image is 640 x 480' "$T/err" || fail "reading the figure back: $(cat "$T/err")"
"$DCZ" plot "$T/c.dcz" --kind waterfall --json -q -o "$T/w.png" > "$T/w.json" || fail "json"
[ "$(json_field width "$T/w.json")" = 900 ] && [ "$(json_field kind "$T/w.json")" = waterfall ] || fail "json: $(cat "$T/w.json")"
# refusals write nothing
expect 1 "$DCZ" plot "$T/c.dcz" --kind pie -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" --kind weights -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" --kind weights --layer fc9 -o "$T/x.png"
grep -q 'fc9' "$T/err" || fail "the unknown layer is not named: $(cat "$T/err")"
expect 1 "$DCZ" plot "$T/c.dcz" --kind waterfall --width 100 -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" --kind waterfall --validation 100 -o "$T/x.png"
grep -q "draws no scan" "$T/err" || fail "scan options for a waterfall: $(cat "$T/err")"
expect 1 "$DCZ" plot "$T/c.dcz" --kind sparsity --layer fc1 --sparsity-levels 0.5 -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" --kind waterfall --data $D -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" "$T/dense.dcz" --kind sparsity --layer fc1 -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" --kind sensitivity -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" --kind calibration --layer fc2 -o "$T/x.png"
expect 1 "$DCZ" plot "$T/c.dcz" --kind waterfall
[ -e "$T/x.png" ] && fail "a refused plot wrote its output"
exit 0
