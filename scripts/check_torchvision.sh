#!/usr/bin/env bash
# check_torchvision.sh DIR: the networks scripts/make_torchvision_fixtures.py
# wrote into DIR (torchvision's, exported by PyTorch at opset 13), each
# imported by dcz, run on its two inputs and compared with PyTorch's outputs
# (max |dcz - torch| / max |torch| at most 1e-5); then exported, checked by
# onnx.checker (Debian's python3-onnx) and imported again, which must give
# the same outputs bit for bit. Then, imported with torchvision's evaluation
# preprocessing recorded (--resize 256 --crop 224 --normalize imagenet),
# `dcz run` on photo.jpg (400x300) gives PyTorch's outputs for that photo
# through torchvision's transform (NAME.photo.f32) within 1e-5 as well.
# One line per network; exit 1 if any fails.
set -u
DIR=${1:?usage: check_torchvision.sh DIR}
source "$(dirname "$0")/../tests/cli/lib.bash"   # DCZ, a scratch folder T, reldiff


bad=0
printf '%-20s %7s %7s %10s  %-6s %10s\n' network layers nodes rel.diff export photo
for onnx in "$DIR"/*.onnx; do
    n=$(basename "$onnx" .onnx)
    if ! "$DCZ" import "$onnx" --json -o "$T/$n.dcz" > "$T/$n.json" 2> "$T/$n.err"; then
        printf '%-20s refused: %s\n' "$n" "$(cat "$T/$n.err")"
        bad=1
        continue
    fi
    layers=$(grep -o '"name":' "$T/$n.json" | wc -l)
    nodes=$(sed -n 's/.*"nodes":\([0-9]*\).*/\1/p' "$T/$n.json")
    "$DCZ" run "$T/$n.dcz" --raw "$DIR/$n.in.f32" --shape 2,3,224,224 -q -o "$T/$n.out" > /dev/null
    r=$(reldiff "$T/$n.out" "$DIR/$n.logits.f32")
    x=ok
    "$DCZ" export "$T/$n.dcz" -q -o "$T/$n.x.onnx" > /dev/null &&
        /usr/bin/python3 -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]))" "$T/$n.x.onnx" &&
        "$DCZ" import "$T/$n.x.onnx" -q -o "$T/$n.x.dcz" &&
        "$DCZ" run "$T/$n.x.dcz" --raw "$DIR/$n.in.f32" --shape 2,3,224,224 -q -o "$T/$n.x.out" > /dev/null &&
        cmp -s "$T/$n.out" "$T/$n.x.out" || x=FAILED
    awk -v r="$r" 'BEGIN { exit !(r + 0 <= 1e-5) }' || { x="$x, outputs differ"; bad=1; }
    [ "$x" = ok ] || bad=1
    p=-
    if [ -f "$DIR/photo.jpg" ] && [ -f "$DIR/$n.photo.f32" ]; then
        "$DCZ" import "$onnx" --resize 256 --crop 224 --normalize imagenet -q -o "$T/$n.p.dcz" &&
            "$DCZ" run "$T/$n.p.dcz" "$DIR/photo.jpg" -q -o "$T/$n.p.out" > /dev/null &&
            p=$(reldiff "$T/$n.p.out" "$DIR/$n.photo.f32") || p=FAILED
        awk -v r="$p" 'BEGIN { exit !(r + 0 <= 1e-5) }' || bad=1
    fi
    printf '%-20s %7s %7s %10s  %-6s %10s\n' "$n" "$layers" "$nodes" "$r" "$x" "$p"
done
exit $bad
