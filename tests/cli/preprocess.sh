#!/usr/bin/env bash
# The preprocessing a network was trained with, recorded at import
# (--resize, --crop, --normalize; docs/FORMAT.md, PREPROCESS) and applied by
# dcz run to images of other sizes: dcz info shows it (text and JSON), the
# later stages keep it, options that do not fit the model are refused before
# anything is written, and a model without it takes images of its own size
# only; image folders of mixed sizes train and evaluate through it. (Its
# values are checked against torchvision's in tests/unit/test_png.c.)
source "$(dirname "$0")/lib.bash"
FIX="$ROOT/tests/fixtures"

"$DCZ" import "$FIX/onnx/resnet.onnx" -q -o "$T/plain.dcz" || fail "import"
"$DCZ" import "$FIX/onnx/resnet.onnx" --resize 32 --crop 28 --normalize 0.286/0.353 -q -o "$T/prep.dcz" ||
    fail "import with preprocessing"
"$DCZ" info "$T/prep.dcz" | grep -q "^images: size shorter side to 32, crop center 28x28 (width x height), then (x - mean) / std per channel: 0.286/0.353" ||
    fail "info: $("$DCZ" info "$T/prep.dcz" | head -5)"
"$DCZ" info "$T/prep.dcz" --json | grep -q '"preprocess":{"resize":32,"crop_height":28,"crop_width":28,"mean":\[0.28' ||
    fail "info --json: no preprocess"

# a 33x50 gray JPEG: the shorter side to 32, the center 28x28, normalized
"$DCZ" run "$T/prep.dcz" "$FIX/prep/tall.jpg" -q -o "$T/y.f32" > "$T/top" || fail "run with preprocessing"
[ "$(stat -c %s "$T/y.f32")" = 40 ] || fail "not 10 outputs"
expect 2 "$DCZ" run "$T/plain.dcz" "$FIX/prep/tall.jpg"
grep -q "tall.jpg" "$T/err" || fail "another size without preprocessing: $(cat "$T/err")"
# RGB taken as gray by luma, as everywhere; an image smaller than the crop: refused
"$DCZ" run "$T/prep.dcz" "$FIX/prep/photo.jpg" -q > /dev/null || fail "an RGB photo"
"$DCZ" import "$FIX/onnx/resnet.onnx" --crop 28 -q -o "$T/crop.dcz" || fail "crop alone"
expect 2 "$DCZ" run "$T/crop.dcz" "$FIX/prep/small.png"
grep -q "smaller than the 28x28 crop" "$T/err" || fail "small image: $(cat "$T/err")"

# kept by the later stages
"$DCZ" prune "$T/prep.dcz" --sparsity 0.5 -q -o "$T/p.dcz" && "$DCZ" quantize "$T/p.dcz" -q -o "$T/q.dcz" &&
    "$DCZ" encode "$T/q.dcz" -q -o "$T/e.dcz" || fail "stages"
"$DCZ" info "$T/e.dcz" | grep -q "^images: size shorter side to 32" || fail "lost by the stages"
"$DCZ" run "$T/e.dcz" "$FIX/prep/tall.jpg" -q > /dev/null || fail "run the encoded model"

# refused before anything is written
expect 2 "$DCZ" import "$FIX/onnx/resnet.onnx" --crop 24x28 -o "$T/bad.dcz"
grep -q "does not give the model's 28x28 input" "$T/err" || fail "crop: $(cat "$T/err")"
expect 2 "$DCZ" import "$FIX/onnx/resnet.onnx" --normalize imagenet -o "$T/bad.dcz"
grep -q "gives 3 channels, the model takes 1" "$T/err" || fail "channels: $(cat "$T/err")"
expect 1 "$DCZ" import "$FIX/onnx/resnet.onnx" --normalize 0.5 -o "$T/bad.dcz"
expect 1 "$DCZ" import "$FIX/onnx/resnet.onnx" --normalize 0.5/0 -o "$T/bad.dcz"
expect 1 "$DCZ" import "$FIX/onnx/resnet.onnx" --resize 70000 -o "$T/bad.dcz"
expect 1 "$DCZ" import "$FIX/onnx/resnet.onnx" --crop 2x -o "$T/bad.dcz"
[ ! -e "$T/bad.dcz" ] || fail "a refused import wrote its output"

# image folders of mixed sizes: 28x28 PNGs with a 33x50 JPEG among them,
# refused as they are, taken through preprocessing (train records it, eval
# applies the model's record)
if [ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    "$ROOT/build/tests/idx2png" fashion-mnist "$T/imgs" 12 6 > /dev/null || fail "idx2png"
    cls=$(ls "$T/imgs/train" | head -n 1)
    cp "$FIX/prep/tall.jpg" "$T/imgs/train/$cls/zz-tall.jpg"
    expect 2 "$DCZ" train --arch lenet5 --epochs 1 --data "$T/imgs" -o "$T/t.dcz"
    grep -q "zz-tall.jpg is 33 x 50" "$T/err" || fail "mixed sizes without preprocessing: $(cat "$T/err")"
    "$DCZ" train --arch lenet5 --epochs 1 --data "$T/imgs" --resize 28 --crop 28 --normalize 0.286/0.353 -q \
        -o "$T/t.dcz" || fail "train through preprocessing"
    "$DCZ" info "$T/t.dcz" | grep -q "^images: size shorter side to 28" || fail "train did not record it"
    cp "$FIX/prep/tall.jpg" "$T/imgs/test/$cls/zz-tall.jpg"
    "$DCZ" eval "$T/t.dcz" --data "$T/imgs" -q --json > "$T/eval.json" || fail "eval through the record"
    n=$(find "$T/imgs/test" -type f | wc -l)
    grep -q "\"samples\":$n," "$T/eval.json" || fail "eval of $n images: $(cat "$T/eval.json")"
else
    echo "SKIP image folders: Debian's dataset-fashion-mnist is not installed"
fi
echo "ok"
