#!/usr/bin/env bash
# latency.sh: whole-model latency at batch 1 and batch 64 (median and p99)
# of each model in libdcz (dcz bench: the dense fp32 file, the compressed
# file, the compressed file calibrated for int8) next to ONNX Runtime on the
# same network's dense fp32 ONNX export (dcz export) and PyTorch fp32 where
# it is installed (LeNets only); same machine, same run, same thread count.
#
#   bash bench/latency.sh [THREADS] [RUNS] [MODELS]
#       defaults: 1 thread, 2000 runs at batch 1 (RUNS / 20 at batch 64),
#       MODELS "lenet300 lenet5 cnn resnet mobilenetv2"
#   ROUNDS=N (default 3): each model's runtimes are timed in N rounds, one
#       after the other within a round, and each figure is the median of
#       its N rounds' (a host whose speed drifts from one minute to the next
#       then moves every runtime of a round alike, not one runtime alone);
#       the compressed file's ratio to ONNX Runtime at batch 1 is also
#       printed round by round, its spread.
#   BASE=PATH: another dcz binary (an earlier commit's bin/dcz) timed on
#       the same files in the same rounds, each right after this one; a
#       row per dcz row gives its figures and this one's over them (above
#       1: this build slower), so a change can be checked for latency.
#
# The models are made here by bench/models.sh (untrained: latency depends
# on the structure, not on the weights' values; pruned and quantized by the
# samples' compress recipes, calibrated for int8 on 500 training
# samples). Peers are benchmark tools, never dependencies of dcz:
# onnxruntime from PyPI (ORT_PYTHON, default python3, must import it) and
# Debian's python3-torch (PYTHON); each is skipped with a note when absent.
# libdcz runs on the CPU (--device cpu), as ONNX Runtime does here. Time
# with nothing else running.
set -u
cd "$(dirname "$0")/.."
threads=${1:-1}
runs=${2:-2000}
models=${3:-lenet300 lenet5 cnn resnet mobilenetv2}
runs64=$((runs / 20 > 20 ? runs / 20 : 20))
rounds=${ROUNDS:-3}
case $rounds in ''|*[!0-9]*|0) echo "latency: ROUNDS must be a positive integer, not '$rounds'" >&2; exit 1 ;; esac
dcz=bin/dcz
# the dcz command links OpenBLAS (training); its worker threads, started at
# load and idle here, spin a while before they sleep: keep them to the
# thread count timed
export OPENBLAS_NUM_THREADS=$threads
[ -x "$dcz" ] || { echo "latency: build $dcz first (make)" >&2; exit 1; }
[ -z "${BASE:-}" ] || [ -x "$BASE" ] || { echo "latency: BASE=$BASE is no executable dcz" >&2; exit 1; }
# an earlier release reads the files only without arithmetic coding (format
# 2.2); the runtime runs the same forms either way
[ -z "${BASE:-}" ] || export ENCODE_FLAGS=--no-arith
py=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
ort_py=${ORT_PYTHON:-$py}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

# make_model NAME: $w/NAME-dense.dcz, NAME.dcz, NAME-int8.dcz and NAME.onnx
. bench/models.sh

# field NAME of a JSON line
field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }

# the median of the numbers given (the lower middle one of an even count)
middle() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }

# over KEY: the medians over the rounds of KEY's median and p99 (med[KEY.ROUND], p99[...])
over() {
    local k a=() b=()
    for k in $(seq "$rounds"); do a+=("${med[$1.$k]}"); b+=("${p99[$1.$k]}"); done
    echo "$(middle "${a[@]}") $(middle "${b[@]}")"
}

# row MODEL RUNTIME B1_MED B1_P99 B64_MED B64_P99 BASE1 BASE64: the ratios
# are the row's medians over the compressed file's (above 1: dcz faster)
row() {
    printf '%-12s %-26s %9.1f %9.1f %6.2fx %10.1f %10.1f %6.2fx\n' "$1" "$2" "$3" "$4" \
        "$(awk -v a="$3" -v b="$7" 'BEGIN { print a / b }')" "$5" "$6" "$(awk -v a="$5" -v b="$8" 'BEGIN { print a / b }')"
}

echo "== whole-model latency, $threads thread(s), microseconds; $runs timed runs at batch 1, $runs64 at batch 64;" \
    "medians of $rounds rounds"
echo "   CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
printf '%-12s %-26s %9s %9s %7s %10s %10s %7s\n' model runtime "b1 med" "b1 p99" "vs dcz" "b64 med" "b64 p99" \
    "vs dcz"
for m in $models; do
    make_model "$m" || { echo "latency: cannot make $m" >&2; exit 1; }
    declare -A med=() p99=()
    ort=ok ort_out=
    # rounds: every runtime once a round, figures kept as KEY.ROUND
    for k in $(seq "$rounds"); do
        for v in "$m" "$m-dense" "$m-int8"; do
            for b in 1 64; do
                r=$runs; [ $b = 64 ] && r=$runs64
                for who in "" ${BASE:+base-}; do
                    bin=$dcz; [ -n "$who" ] && bin=$BASE
                    j=$("$bin" bench "$w/$v.dcz" --batch $b --threads "$threads" --runs "$r" --warmup 20 \
                        --device cpu --json) || exit 1
                    med[$who$v.$b.$k]=$(echo "$j" | field median_us)
                    p99[$who$v.$b.$k]=$(echo "$j" | field p99_us)
                done
            done
        done
        [ $ort = ok ] || continue
        out=$("$ort_py" bench/ort_latency.py "$w/$m.onnx" "$threads" "$runs" 1 2>&1) &&
            out64=$("$ort_py" bench/ort_latency.py "$w/$m.onnx" "$threads" "$runs64" 64 2>&1)
        rc=$?
        if [ $rc -eq 3 ]; then ort=absent; continue; fi
        if [ $rc -ne 0 ]; then ort=failed ort_out="$out ${out64:-}"; continue; fi
        read -r _ _ _ med[ort.1.$k] _ p99[ort.1.$k] <<< "$out"
        read -r _ _ _ med[ort.64.$k] _ p99[ort.64.$k] <<< "$out64"
    done
    read -r b1 c1p <<< "$(over "$m.1")"
    read -r b64 c64p <<< "$(over "$m.64")"
    row "$m" "dcz compressed ($(stat -c %s "$w/$m.dcz") B)" "$b1" "$c1p" "$b64" "$c64p" "$b1" "$b64"
    for v in int8 dense; do
        read -r m1 p1 <<< "$(over "$m-$v.1")"
        read -r m64 p64 <<< "$(over "$m-$v.64")"
        name="dcz int8"; [ $v = dense ] && name="dcz dense fp32"
        row "$m" "$name" "$m1" "$p1" "$m64" "$p64" "$b1" "$b64"
    done
    if [ -n "${BASE:-}" ]; then
        for v in "" -int8 -dense; do
            read -r m1 p1 <<< "$(over "$m$v.1")"
            read -r m64 p64 <<< "$(over "$m$v.64")"
            read -r o1 q1 <<< "$(over "base-$m$v.1")"
            read -r o64 q64 <<< "$(over "base-$m$v.64")"
            label=${v#-}
            printf '%-12s %-26s %9.1f %9.1f %6.3f %10.1f %10.1f %6.3f\n' "$m" "BASE ${label:-compressed}" \
                "$o1" "$q1" "$(awk -v a="$m1" -v b="$o1" 'BEGIN { print a / b }')" "$o64" "$q64" \
                "$(awk -v a="$m64" -v b="$o64" 'BEGIN { print a / b }')"
        done
    fi
    if [ $ort = absent ]; then
        echo "             ONNX Runtime: SKIP (onnxruntime does not import in $ort_py; set ORT_PYTHON)"
    elif [ $ort = failed ]; then
        echo "             ONNX Runtime: failed: $ort_out"
    else
        read -r om1 op1 <<< "$(over ort.1)"
        read -r om64 op64 <<< "$(over ort.64)"
        row "$m" "ONNX Runtime dense fp32" "$om1" "$op1" "$om64" "$op64" "$b1" "$b64"
        spread=
        for k in $(seq "$rounds"); do
            spread+=" $(awk -v a="${med[ort.1.$k]}" -v b="${med[$m.1.$k]}" 'BEGIN { printf "%.2fx", a / b }')"
        done
        echo "             rounds: ONNX Runtime over dcz compressed at batch 1:$spread"
    fi
    case $m in
        lenet300|lenet5)
            out=$("$py" bench/torch_latency.py "$m" "$threads" "$runs" 2>&1)
            rc=$?
            if [ $rc -eq 3 ]; then echo "             PyTorch: SKIP (python3-torch is not installed)"
            elif [ $rc -ne 0 ]; then echo "             PyTorch: failed: $out"
            else
                echo "$out" | while read -r _ variant _ tm _ tp; do
                    printf '%-12s %-26s %9.1f %9.1f %6.2fx\n' "$m" "PyTorch $variant" "$tm" "$tp" \
                        "$(awk -v a="$tm" -v b="$b1" 'BEGIN { print a / b }')"
                done
            fi ;;
    esac
    unset med p99
done
echo "(vs dcz: the row's median over the compressed file's in libdcz; above 1, dcz compressed is faster)"
[ -n "${BASE:-}" ] && echo "(BASE rows: $BASE; their ratio is this build's median over BASE's; above 1, this build is slower)"
