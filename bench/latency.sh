#!/usr/bin/env bash
# latency.sh: batch-1 latency of compressed LeNet-300-100 and LeNet-5 in
# libdcz (dcz bench) next to PyTorch fp32 and PyTorch with dynamic int8
# quantization, same machine, same run, same thread count; median and p99.
#
#   bash bench/latency.sh [THREADS] [RUNS]     (defaults: 1 thread, 2000 runs)
#
# The compressed files are made here with the paper's layer densities
# (LeNet-300-100: 8/9/26% kept; LeNet-5: 66/12/8/19% kept) and dcz's
# default codebooks and Huffman coding: latency depends on the structure,
# not on how well the weights were trained, so one training epoch is enough.
# PyTorch is Debian's python3-torch; without it that half is skipped.
set -u
cd "$(dirname "$0")/.."
threads=${1:-1}
runs=${2:-2000}
dcz=bin/dcz
[ -x "$dcz" ] || { echo "latency: build $dcz first (make)" >&2; exit 1; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
make_model() { # name arch sparsity
    "$dcz" train --arch "$2" --epochs 1 --data fashion-mnist --threads "$threads" -q -o "$w/$1-dense.dcz" &&
    "$dcz" prune "$w/$1-dense.dcz" --sparsity "$3" -q -o "$w/$1-pruned.dcz" &&
    "$dcz" quantize "$w/$1-pruned.dcz" -q -o "$w/$1-quant.dcz" &&
    "$dcz" encode "$w/$1-quant.dcz" -q -o "$w/$1.dcz"
}
make_model lenet300 lenet300 'fc1=0.92,fc2=0.91,fc3=0.74' || { echo "latency: cannot make lenet300"; exit 1; }
make_model lenet5 lenet5 'conv1=0.34,conv2=0.88,fc1=0.92,fc2=0.81' || { echo "latency: cannot make lenet5"; exit 1; }

py=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
echo "== batch-1 latency, $threads thread(s), $runs timed runs each (microseconds)"
printf '%-10s %-22s %10s %10s %12s\n' model runtime median p99 "vs dcz"
for m in lenet300 lenet5; do
    j=$("$dcz" bench "$w/$m.dcz" --batch 1 --threads "$threads" --runs "$runs" --warmup 200 --json) || exit 1
    dmed=$(echo "$j" | sed -n 's/.*"median_us":\([0-9.e+-]*\).*/\1/p')
    dp99=$(echo "$j" | sed -n 's/.*"p99_us":\([0-9.e+-]*\).*/\1/p')
    printf '%-10s %-22s %10.1f %10.1f %12s\n' "$m" "dcz ($(stat -c %s "$w/$m.dcz") B)" "$dmed" "$dp99" "1.0x"
    out=$("$py" bench/torch_latency.py "$m" "$threads" "$runs" 2>&1)
    rc=$?
    if [ $rc -eq 3 ]; then echo "           PyTorch: SKIP (python3-torch is not installed)"; continue; fi
    if [ $rc -ne 0 ]; then echo "           PyTorch: failed: $out"; continue; fi
    echo "$out" | while read -r _ variant _ med _ p99; do
        printf '%-10s %-22s %10.1f %10.1f %11.1fx\n' "$m" "PyTorch $variant" "$med" "$p99" \
            "$(awk -v a="$med" -v b="$dmed" 'BEGIN { print a / b }')"
    done
done
echo "(vs dcz: PyTorch's median over dcz's; above 1, dcz is faster)"
