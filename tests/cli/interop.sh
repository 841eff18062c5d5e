#!/usr/bin/env bash
# ONNX and PNG end to end: models exported from PyTorch (chains, a ResNet, a
# MobileNetV2-style net) import and give PyTorch's logits (max absolute
# |difference| <= 1e-4 on 100 inputs, the same argmax on all) and accuracy;
# models with unsupported operators, truncated and damaged ones are refused
# with exit code 2; PNG images of a test sample in every encoding give that
# sample's scores; raw float32 input with --shape, and its refusals; an
# imported chain, ResNet and MobileNetV2-style model are compressed with
# retraining on a PNG-folder dataset and evaluated; a SiLU (Sigmoid and Mul)
# imports as one layer; dense, graph and compressed models export to ONNX (checked by
# onnx.checker when python3-onnx is installed, SKIP otherwise) and import
# back to the same outputs (bit for bit for the graphs, <= 1e-5 otherwise);
# bad datasets are refused with exit code 2.
source "$(dirname "$0")/lib.bash"
FIX="$ROOT/tests/fixtures/onnx"
PNG="$ROOT/tests/fixtures/png"
D=fashion-mnist
gzip -dc "$FIX/inputs.f32.gz" > "$T/inputs.f32" || fail "inputs"

# maxdiff A B: the largest |a - b| over two raw float32 files of equal size
maxdiff() {
    [ "$(stat -c %s "$1")" = "$(stat -c %s "$2")" ] || { echo 1e30; return; }
    paste <(od -An -v -tf4 -w4 "$1") <(od -An -v -tf4 -w4 "$2") |
        awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g\n", m + 0 }'
}
# le X LIMIT: X <= LIMIT
# (X must be a number: an empty or garbled figure fails, never passes)
le() { awk -v x="$1" -v l="$2" 'BEGIN { exit !(x ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ && x + 0 <= l + 0) }'; }
# argmax_diff A B: on how many rows of 10 float32 the largest entry differs
argmax_diff() {
    paste <(od -An -v -tf4 -w40 "$1") <(od -An -v -tf4 -w40 "$2") | awk '{
        a = 1; b = 11
        for (i = 2; i <= 10; i++) { if ($i > $a) a = i; if ($(i + 10) > $b) b = i + 10 }
        n += (a + 10 != b) } END { print n + 0 }'
}

# ---- PyTorch models: the same logits and the same accuracy ----------------------
for m in mlp cnn cnn_matmul resnet mbv2; do
    "$DCZ" import "$FIX/$m.onnx" --data $D --json -o "$T/$m.dcz" > "$T/$m.json" || fail "import $m"
    "$DCZ" run "$T/$m.dcz" --raw "$T/inputs.f32" --shape 100,1,28,28 -q -o "$T/$m.out" > /dev/null || fail "run $m"
    d=$(maxdiff "$T/$m.out" "$FIX/$m.out.f32")
    echo "$m: max |dcz - pytorch| = $d"
    le "$d" 1e-4 || fail "$m: logits differ from PyTorch's by $d"
    [ "$(argmax_diff "$T/$m.out" "$FIX/$m.out.f32")" = 0 ] || fail "$m: argmax differs from PyTorch's"
    acc=$(json_field accuracy "$T/$m.json")
    torch=$(sed -n "s/^$m //p" "$FIX/torch_accuracy.txt")
    awk -v a="$acc" -v t="$torch" 'BEGIN { d = a - t; exit !(d < 0.002 && d > -0.002) }' ||
        fail "$m: accuracy $acc, PyTorch $torch"
done
grep -q '"name":"fc1","op":"dense","from":"Gemm .*","density":0.2,"encoding":"sparse-f32"' "$T/cnn.json" ||
    fail "the fc layer pruned in PyTorch is not sparse: $(cat "$T/cnn.json")"
"$DCZ" info "$T/cnn.dcz" > "$T/info.txt" || fail "info"
grep -q '^import ' "$T/info.txt" || fail "no import stage in info"
grep -q '"op":"add","from":"Add .*/blocks/blocks.1/Add' "$T/resnet.json" || fail "resnet: no residual add"
grep -q '"op":"mul","from":"Mul ' "$T/mbv2.json" && grep -q '"op":"hard_swish"' "$T/mbv2.json" ||
    fail "mbv2: no mul or hard_swish layer"
# the two models that were refused before graphs: a residual Add, Sigmoid and Tanh
expect 0 "$DCZ" import "$FIX/branch.onnx" -o "$T/branch.dcz"
expect 0 "$DCZ" import "$FIX/unsupported.onnx" -o "$T/sigmoid.dcz"
# SiLU as exporters write it (Conv, then Sigmoid and Mul of the Conv's output
# and the Sigmoid's): one SILU layer from both nodes
expect 0 "$DCZ" import "$ROOT/tests/fuzz/corpus/onnx/silu_opset13.onnx" --json -o "$T/silu.dcz"
grep -q '"name":"silu1","op":"silu","from":"Sigmoid .* + Mul [^"]*"}\]' "$T/out" &&
    [ "$(json_field nodes_folded "$T/out")" = 1 ] || fail "silu: not one SILU layer: $(cat "$T/out")"

# ---- refusals: exit code 2, a clear message, no output -------------------------
# unsupported.onnx with its Sigmoid and Tanh renamed to Hardmax and Selu (names of
# equal length: the protobuf stays valid), operators dcz lacks
LC_ALL=C sed 's/Sigmoid/Hardmax/g; s/Tanh/Selu/g' "$FIX/unsupported.onnx" > "$T/unsup.onnx"
[ "$(stat -c %s "$T/unsup.onnx")" = "$(stat -c %s "$FIX/unsupported.onnx")" ] || fail "renaming operators"
expect 2 "$DCZ" import "$T/unsup.onnx" -o "$T/u.dcz"
grep -q "2 unsupported operators: Hardmax '/Hardmax', Selu '/Selu'" "$T/err" || fail "unsupported: $(cat "$T/err")"
# many nodes of a few such operators: each named once with its count and
# its first node, in a line of a few hundred characters, not one per node
LC_ALL=C sed 's/Conv/Celu/g; s/Clip/Ceil/g' "$FIX/mbv2.onnx" > "$T/many.onnx"
expect 2 "$DCZ" import "$T/many.onnx" -o "$T/u.dcz"
grep -q "24 nodes of 2 unsupported operators: Celu (16 nodes, the first '/stem/stem.0/Celu'), Ceil (8 nodes, the first '/stem/stem.2/Ceil')" "$T/err" ||
    fail "many unsupported nodes: $(cat "$T/err")"
[ "$(grep -o "Celu" "$T/err" | wc -l)" -eq 2 ] && [ "$(wc -c < "$T/err")" -lt 600 ] ||
    fail "a node past the first named, or a long line: $(cat "$T/err")"
size=$(stat -c %s "$FIX/cnn.onnx")
head -c $((size / 2)) "$FIX/cnn.onnx" > "$T/trunc.onnx"
expect 2 "$DCZ" import "$T/trunc.onnx" -o "$T/u.dcz"
grep -q "not an ONNX model" "$T/err" || fail "truncated: $(cat "$T/err")"
cp "$FIX/cnn.onnx" "$T/bad.onnx"
printf '\xff\xff\xff\xff\xff' | dd of="$T/bad.onnx" bs=1 seek=0 conv=notrunc 2>/dev/null
expect 2 "$DCZ" import "$T/bad.onnx" -o "$T/u.dcz"
expect 2 "$DCZ" import "$PNG/img0_gray8.png" -o "$T/u.dcz"
expect 2 "$DCZ" import "$T/cnn.dcz" -o "$T/u.dcz"
expect 2 "$DCZ" import "$T/missing.onnx" -o "$T/u.dcz"
expect 1 "$DCZ" import "$FIX/mlp.onnx"
expect 1 "$DCZ" export "$T/mlp.dcz" --opset 10 -o "$T/u.onnx"
expect 2 "$DCZ" export "$T/trunc.onnx" -o "$T/u.onnx"
[ ! -e "$T/u.dcz" ] && [ ! -e "$T/u.onnx" ] || fail "a refused model left an output"

# ---- PNG images: every encoding of test image 0 gives its IDX scores ------------
"$DCZ" run "$T/cnn.dcz" --data $D --index 0 --top 3 > "$T/idx.txt" || fail "run idx"
want=$(sed 's/^sample 0 (label [0-9]*)://' "$T/idx.txt")
for f in gray8 gray16 gray_alpha rgb rgba16 palette palette_trns; do
    "$DCZ" run "$T/cnn.dcz" "$PNG/img0_$f.png" --top 3 > "$T/png.txt" || fail "run $f"
    got=$(sed 's/^[^:]*://' "$T/png.txt")
    [ "$got" = "$want" ] || fail "img0_$f.png scores '$got', the IDX sample '$want'"
done
"$DCZ" run "$T/cnn.dcz" "$PNG/img0_gray8.png" "$PNG/img0_rgb.png" -o "$T/two.f32" -q > /dev/null || fail "two images"
[ "$(stat -c %s "$T/two.f32")" = 80 ] || fail "two images: raw output size"
expect 2 "$DCZ" run "$T/cnn.dcz" "$PNG/img0_32x32.png"
grep -q -- "--resize" "$T/err" || fail "size mismatch message: $(cat "$T/err")"
expect 0 "$DCZ" run "$T/cnn.dcz" "$PNG/img0_32x32.png" --resize
expect 0 "$DCZ" run "$T/mlp.dcz" "$PNG/colour_rgb.png"
expect 2 "$DCZ" run "$T/cnn.dcz" "$FIX/mlp.onnx"
grep -q "neither a PNG nor a JPEG" "$T/err" || fail "non-image message: $(cat "$T/err")"
head -c 300 "$PNG/img0_gray8.png" > "$T/cut.png"
expect 2 "$DCZ" run "$T/cnn.dcz" "$T/cut.png"
grep -q "corrupt" "$T/err" || fail "corrupt PNG message: $(cat "$T/err")"
expect 2 "$DCZ" run "$T/cnn.dcz" "$T/nothing.png"

# ---- JPEG images: test image 0 as a gray JPEG of quality 100 gives the IDX
# sample's top class; a folder of JPEGs (and PNGs beside them) trains and evaluates
"$ROOT/build/tests/idx2png" $D "$T/jp" 3 2 jpeg || fail "idx2png jpeg"
jpg=$(ls "$T"/jp/test/*/00000.jpg)
[ -f "$jpg" ] || fail "no JPEG of test image 0"
"$DCZ" run "$T/cnn.dcz" "$jpg" --top 1 > "$T/jpg.txt" || fail "run a JPEG"
[ "$(sed 's/^[^:]*: *\([^ ]*\).*/\1/' "$T/jpg.txt")" = "$(echo "$want" | sed 's/^ *\([^ ]*\).*/\1/')" ] ||
    fail "the JPEG's top class '$(cat "$T/jpg.txt")', the IDX sample's '$want'"
cp "$PNG/img0_gray8.png" "$(dirname "$jpg")/png-beside.png"
"$DCZ" train --arch mlp:784-16-10 --epochs 1 --data "$T/jp" -q -o "$T/jp.dcz" || fail "train on a JPEG folder"
expect 0 "$DCZ" eval "$T/jp.dcz" --data "$T/jp" --json
grep -q '"samples":21' "$T/out" || fail "eval on the JPEG folder: $(cat "$T/out")"
head -c 200 "$jpg" > "$T/cut.jpg"
expect 2 "$DCZ" run "$T/cnn.dcz" "$T/cut.jpg"
grep -q "corrupt or unsupported JPEG" "$T/err" || fail "cut JPEG message: $(cat "$T/err")"

# ---- raw float32 samples ---------------------------------------------------------
"$DCZ" run "$T/cnn.dcz" --raw "$T/inputs.f32" --shape 100,784 -q -o "$T/flat.out" > /dev/null || fail "N,D shape"
cmp -s "$T/flat.out" "$T/cnn.out" || fail "N,D and N,C,H,W give different outputs"
"$DCZ" run "$T/cnn.dcz" --input "$T/inputs.f32" -q -o "$T/old.out" > /dev/null || fail "--input"
cmp -s "$T/old.out" "$T/cnn.out" || fail "--input differs from --raw"
# images N,1,28,28 into a perceptron of 784 inputs: the same values
"$DCZ" train --arch mlp:784-8-10 --epochs 1 --data fashion-mnist -q -o "$T/flat.dcz" || fail "train a perceptron"
"$DCZ" run "$T/flat.dcz" --raw "$T/inputs.f32" --shape 100,1,28,28 -q -o "$T/p4.out" > /dev/null || fail "N,C,H,W into 784"
"$DCZ" run "$T/flat.dcz" --raw "$T/inputs.f32" --shape 100,784 -q -o "$T/p2.out" > /dev/null || fail "N,D into 784"
cmp -s "$T/p4.out" "$T/p2.out" || fail "a perceptron's outputs depend on the shape's view"
expect 2 "$DCZ" run "$T/cnn.dcz" --raw "$T/inputs.f32" --shape 100,3,28,28
grep -q "does not fit the model" "$T/err" || fail "wrong shape message"
expect 2 "$DCZ" run "$T/cnn.dcz" --raw "$T/inputs.f32" --shape 99,1,28,28
expect 2 "$DCZ" run "$T/cnn.dcz" --raw "$T/inputs.f32" --shape 100,1,28,27
head -c 1000 "$T/inputs.f32" > "$T/part.f32"
expect 2 "$DCZ" run "$T/cnn.dcz" --raw "$T/part.f32"
expect 1 "$DCZ" run "$T/cnn.dcz" --raw "$T/inputs.f32" --shape 100x784
expect 1 "$DCZ" run "$T/cnn.dcz" --shape 100,784 "$PNG/img0_gray8.png"
expect 1 "$DCZ" run "$T/cnn.dcz" --raw "$T/inputs.f32" "$PNG/img0_gray8.png"
ls "$T" | grep -q '\.tmp\.' && fail "a temporary file was left"

# ---- export: onnx.checker, and back to the same outputs --------------------------
checker() {
    if /usr/bin/python3 -c 'import onnx' 2> /dev/null; then
        /usr/bin/python3 -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' "$1" ||
            fail "onnx.checker refuses $1"
        echo "onnx.checker: $(basename "$1") ok"
    else
        echo "SKIP onnx.checker on $(basename "$1"): python3-onnx is not installed"
    fi
}
roundtrip() {  # MODEL.dcz NAME [LIMIT]: export, check, import, same outputs (within LIMIT)
    "$DCZ" export "$1" -q -o "$T/$2.onnx" > /dev/null || fail "export $2"
    checker "$T/$2.onnx"
    "$DCZ" import "$T/$2.onnx" -q -o "$T/$2.back.dcz" > /dev/null || fail "import of the export $2"
    "$DCZ" run "$1" --raw "$T/inputs.f32" -q -o "$T/$2.a" > /dev/null || fail "run $2"
    "$DCZ" run "$T/$2.back.dcz" --raw "$T/inputs.f32" -q -o "$T/$2.b" > /dev/null || fail "run $2 back"
    d=$(maxdiff "$T/$2.a" "$T/$2.b")
    echo "$2: export -> import, max |difference| = $d"
    le "$d" "${3:-1e-5}" || fail "$2: the exported model differs by $d"
}
roundtrip "$T/mlp.dcz" mlp-dense
roundtrip "$T/resnet.dcz" resnet 0
roundtrip "$T/mbv2.dcz" mbv2 0
roundtrip "$T/branch.dcz" branch 0
roundtrip "$T/silu.dcz" silu 0
"$DCZ" export "$T/mbv2.dcz" --json -o "$T/mbv2.onnx" > "$T/x.json" || fail "export mbv2"
[ "$(json_field opset "$T/x.json")" = 14 ] || fail "mbv2 (HardSwish) is not written at opset 14: $(cat "$T/x.json")"
"$DCZ" export "$T/mbv2.dcz" --opset 13 -q -o "$T/mbv2-13.onnx" > /dev/null || fail "export mbv2 at opset 13"
checker "$T/mbv2-13.onnx"
"$DCZ" export "$T/mlp.dcz" --opset 11 -q -o "$T/mlp11.onnx" > /dev/null || fail "export opset 11"
checker "$T/mlp11.onnx"

# ---- a PNG-folder dataset: evaluate, compress with retraining, export ------------
"$ROOT/build/tests/idx2png" $D "$T/png" 30 10 || fail "idx2png"
"$DCZ" eval "$T/cnn.dcz" --data "$T/png" --json > "$T/e0.json" || fail "eval on PNG folders"
[ "$(json_field samples "$T/e0.json")" = 100 ] || fail "PNG test split: $(cat "$T/e0.json")"
# the imported chain and graphs (residual, inverted residual): compressed with
# retraining on the folders, run by libdcz (the accuracy compress reports is
# eval's), codebook + entropy coding, the graph kept, exported back
for spec in cnn:0.6:3 resnet:0.5:2 mbv2:0.5:2; do
    IFS=: read -r m min_acc min_ratio <<< "$spec"
    "$DCZ" eval "$T/$m.dcz" --data "$T/png" --json > "$T/e0.json" || fail "eval $m on PNG folders"
    "$DCZ" compress "$T/$m.dcz" --data "$T/png" --rounds 1 --prune-epochs 1 --final-epochs 1 --quant-epochs 1 \
        --threads 1 --seed 3 -q --json -o "$T/$m-small.dcz" > "$T/c.json" || fail "compress $m on PNG folders"
    "$DCZ" eval "$T/$m-small.dcz" --data "$T/png" --json > "$T/e1.json" || fail "eval compressed $m"
    acc=$(json_field accuracy "$T/e1.json") ratio=$(json_field ratio "$T/c.json")
    [ "$acc" = "$(json_field accuracy "$T/c.json")" ] || fail "$m: compress reported $(json_field accuracy "$T/c.json"), eval $acc"
    awk -v a="$acc" -v m="$min_acc" 'BEGIN { exit !(a >= m) }' || fail "compressed $m: accuracy $acc"
    awk -v r="$ratio" -v m="$min_ratio" 'BEGIN { exit !(r >= m) }' || fail "compressed $m: ratio $ratio"
    "$DCZ" info "$T/$m-small.dcz" --json > "$T/i.json" || fail "info compressed $m"
    grep -q '"encoding":"codebook"' "$T/i.json" && grep -qE '"index_coding":"(huffman|arith)"' "$T/i.json" ||
        fail "compressed $m is not codebook + entropy-coded"
    [ "$m" = cnn ] || grep -q '"op":"add","inputs":\["[a-z0-9]*","[a-z0-9]*"\]' "$T/i.json" ||
        fail "$m: no add of two tensors in info"
    echo "PNG folders: $m imported $(json_field accuracy "$T/e0.json"), compressed with retraining to ${ratio}x, accuracy $acc"
    roundtrip "$T/$m-small.dcz" "$m-compressed"
done
# training from scratch on the same folders; a model of dcz's own (softmax last) exports too
"$DCZ" train --arch cnn:c4k3-p2-f10 --epochs 1 --data "$T/png" --threads 1 -q -o "$T/scratch.dcz" > /dev/null ||
    fail "train on PNG folders"
roundtrip "$T/scratch.dcz" trained

# ---- bad datasets: exit code 2 and the offending path ----------------------------
cp -r "$T/png" "$T/bad"
mkdir "$T/bad/train/9-boot-empty"
expect 2 "$DCZ" eval "$T/cnn.dcz" --data "$T/bad"
grep -q "holds no images" "$T/err" || fail "empty class: $(cat "$T/err")"
rmdir "$T/bad/train/9-boot-empty"
echo "notes" > "$T/bad/train/0-tshirt/notes.txt"
expect 2 "$DCZ" compress "$T/cnn.dcz" --data "$T/bad" -o "$T/u.dcz"
grep -q "notes.txt is not an image file" "$T/err" || fail "stray file: $(cat "$T/err")"
rm "$T/bad/train/0-tshirt/notes.txt"
cp "$T/cut.png" "$T/bad/test/3-dress/zz.png"
expect 2 "$DCZ" eval "$T/cnn.dcz" --data "$T/bad"
grep -q "zz.png: corrupt" "$T/err" || fail "corrupt image: $(cat "$T/err")"
cp "$PNG/img0_32x32.png" "$T/bad/test/3-dress/zz.png"
expect 2 "$DCZ" eval "$T/cnn.dcz" --data "$T/bad"
grep -q "one size" "$T/err" || fail "mixed sizes: $(cat "$T/err")"
rm "$T/bad/test/3-dress/zz.png"
expect 0 "$DCZ" eval "$T/cnn.dcz" --data "$T/bad"
[ ! -e "$T/u.dcz" ] || fail "a refused run left an output"
exit 0
