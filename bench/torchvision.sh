#!/usr/bin/env bash
# torchvision.sh: torchvision's nine classification networks at 224 x 224
# on this CPU, dcz against ONNX Runtime in the same run. For each network:
# ONNX Runtime on the ONNX file; dcz on it imported (dense fp32, with
# torchvision's preprocessing recorded), compressed (pruned to 90% in one
# shot, 4-bit codebooks, encoded: the kernels a compressed network runs,
# without its accuracy: the weights are torchvision's random ones) and that
# compressed file calibrated to int8 (on 16 generated images). Medians of
# RUNS runs in ROUNDS rounds that alternate the four (ORT, dense,
# compressed, int8), the least of each one's medians kept: a shared core's
# medians move 5-20% from one minute to the next, which one round would
# hand to whichever ran then. The x columns are the median over the rounds
# of each round's own ratio (its two medians taken seconds apart), not the
# ratio of the two least medians, which may come from different minutes.
# One table per thread count and batch, the CPU named; timings are
# reported, never asserted. Run with nothing else running.
#
#   bash bench/torchvision.sh [NAME ...]     (default: all nine)
#   TV_DIR      the networks and the files made from them (build/torchvision;
#               made once, by scripts/make_torchvision_fixtures.py with
#               Debian's python3-torchvision, then kept)
#   TV_THREADS  thread counts (default "1 N", N this machine's processors)
#   TV_BATCHES  batches (default "1 8");  TV_RUNS  timed runs (default 20)
#   TV_ROUNDS   alternated rounds, the least median kept (default 3)
#   TV_BLOCK    compressed files pruned by blocks of this many input
#               channels (dcz prune --block; 4: the 8-bit kernels' quads
#               full), kept beside the others (default 1: weight by weight)
#   ORT_PYTHON  a Python that imports onnxruntime (PyPI, a peer, never a
#               dependency of dcz; default python3)
# Prints SKIP, with the reason, without python3-torchvision; the ONNX
# Runtime columns say SKIP where onnxruntime does not import.
set -u
cd "$(dirname "$0")/.."
DCZ=${DCZ:-./bin/dcz}
dir=${TV_DIR:-build/torchvision}
threads_list=${TV_THREADS:-"1 $(nproc)"}
batches=${TV_BATCHES:-"1 8"}
runs=${TV_RUNS:-20}
rounds=${TV_ROUNDS:-3}
case $rounds in ''|*[!0-9]*|0) echo "torchvision: TV_ROUNDS must be a positive integer, not '$rounds'" >&2; exit 1 ;; esac
block=${TV_BLOCK:-1}
sfx=; [ "$block" = 1 ] || sfx=-b$block
ort_py=${ORT_PYTHON:-python3}
nets=${*:-resnet18 resnet50 mobilenet_v2 mobilenet_v3_small efficientnet_b0 squeezenet1_1 regnet_x_400mf \
shufflenet_v2_x1_0 densenet121}
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "torchvision networks, CPU: ${cpu:-unknown}; the least of $rounds alternated medians of $runs runs"
[ "$block" = 1 ] || echo "compressed and int8: pruned by blocks of $block input channels (--block $block)"
[ -x "$DCZ" ] || { echo "SKIP torchvision networks: no $DCZ (make)"; exit 0; }
mkdir -p "$dir"
missing=
for n in $nets; do [ -f "$dir/$n.onnx" ] || missing="$missing $n"; done
if [ -n "$missing" ]; then
    /usr/bin/python3 -c "import torchvision" 2> /dev/null ||
        { echo "SKIP torchvision networks: no python3-torchvision (Debian) to export$missing"; exit 0; }
    echo "exporting$missing (scripts/make_torchvision_fixtures.py, once)"
    /usr/bin/python3 scripts/make_torchvision_fixtures.py "$dir" $missing > "$dir/export.log" 2>&1 ||
        { tail -n 5 "$dir/export.log"; echo "exporting the networks failed" >&2; exit 1; }
fi
# calibration images (their content does not matter to the timings)
if [ ! -d "$dir/calib/test" ]; then
    /usr/bin/python3 - "$dir/calib" <<'PY' || { echo "making the calibration images failed" >&2; exit 1; }
import os, random, sys
from PIL import Image
random.seed(1)
for split, n in (("train", 16), ("test", 4)):
    d = os.path.join(sys.argv[1], split, "c0")
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        Image.effect_noise((256, 256), 64).convert("RGB").save(os.path.join(d, "%03d.png" % i))
PY
fi
# the three dcz files of each network, made once
for n in $nets; do
    d=$dir/$n
    [ -f "$d-int8$sfx.dcz" ] && continue
    echo "making $n: dense, compressed, int8"
    { { [ -f "$d.dcz" ] || "$DCZ" import "$dir/$n.onnx" --resize 256 --crop 224 --normalize imagenet -q -o "$d.dcz"; } &&
      "$DCZ" prune "$d.dcz" --sparsity 0.9 --block "$block" -q -o "$d-pruned.dcz" &&
      "$DCZ" quantize "$d-pruned.dcz" --bits 4 -q -o "$d-shared.dcz" &&
      "$DCZ" encode "$d-shared.dcz" -q -o "$d-compressed$sfx.dcz" &&
      "$DCZ" calibrate "$d-compressed$sfx.dcz" --data "$dir/calib" --calib-batches 1 --batch 16 -q -o "$d-int8$sfx.dcz" \
          > /dev/null; } 2> "$d.err" || { cat "$d.err"; echo "making $n's files failed" >&2; exit 1; }
    rm -f "$d-pruned.dcz" "$d-shared.dcz"
done
ort=ok
"$ort_py" -c "import onnxruntime" 2> /dev/null || ort=absent
median() { # FILE THREADS BATCH: dcz bench's median, in ms
    "$DCZ" bench "$1" --device cpu --threads "$2" --batch "$3" --runs "$runs" --warmup 3 --loads 1 -q --json |
        sed -n 's/.*"median_us": *\([0-9.e+-]*\).*/\1/p' | awk '{ printf "%.2f", $1 / 1000 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
least() { # A B: the smaller of two timings, a word that is no number losing
    awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && (a + 0 <= 0 || b + 0 < a + 0)) print b; else print a }'; }
mid() { # the median of the numbers among the words, or -
    printf '%s\n' "$@" | awk '$1 + 0 > 0' | sort -g |
        awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
                                  else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
failed=
for t in $threads_list; do
    for b in $batches; do
        echo
        echo "$t thread(s), batch $b (ms, the least median; x: how many times faster, the median of the rounds' own ratios)"
        printf '%-20s %9s %9s %7s %11s %7s %9s %7s\n' network "ORT" "dcz" "x ORT" compressed "x ORT" int8 "x fp32"
        for n in $nets; do
            d=$dir/$n
            o=SKIP de=- co=- i8=- rd= rc= ri=
            [ $ort = ok ] && o=-
            for r in $(seq "$rounds"); do
                v=-
                if [ $ort = ok ] && [ "$o" != failed ]; then
                    v=$(OMP_NUM_THREADS=$t ORT_WARMUP=3 "$ort_py" bench/ort_latency.py "$dir/$n.onnx" "$t" "$runs" "$b" \
                        2> "$d.ort.err" | awk '{ printf "%.2f", $4 / 1000 }')
                    if [ -n "$v" ]; then o=$(least "$o" "$v"); else o=failed v=-; failed="$failed $d.ort.err"; fi
                fi
                vd=$(median "$d.dcz" "$t" "$b")
                vc=$(median "$d-compressed$sfx.dcz" "$t" "$b")
                vi=$(median "$d-int8$sfx.dcz" "$t" "$b")
                de=$(least "$de" "$vd") co=$(least "$co" "$vc") i8=$(least "$i8" "$vi")
                rd="$rd $(ratio "$v" "$vd")" rc="$rc $(ratio "$v" "$vc")" ri="$ri $(ratio "$vc" "$vi")"
            done
            printf '%-20s %9s %9s %7s %11s %7s %9s %7s\n' "$n" "$o" "$de" "$(mid $rd)" "$co" "$(mid $rc)" \
                "$i8" "$(mid $ri)"
        done
    done
done
[ -z "$failed" ] || echo "ONNX Runtime failed where the table says so; its messages:$failed"
[ $ort = ok ] || echo "ONNX Runtime: SKIP (onnxruntime does not import in $ort_py; set ORT_PYTHON)"
