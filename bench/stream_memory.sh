#!/usr/bin/env bash
# stream_memory.sh: the peak memory of one epoch of `dcz train` on an image
# folder does not grow with its images, since folders stream (their samples
# are decoded from the files batch by batch, never all held). Two folders
# of Fashion-MNIST PNGs, of 1,000 and 10,000 training images (100 test
# images each; tests/cli/idx2png writes them), each trained on for one
# epoch of LeNet-5 under /usr/bin/time: the peak resident set (maximum
# RSS) of each and their ratio. For contrast, the in-memory path on the
# same counts: IDX files of the first 1,000 and 10,000 Fashion-MNIST
# training images, whose samples are held as floats (what a folder took
# before it streamed), and the bytes those floats take. Wall times are
# printed beside, the folder's including the decoding of every image each
# epoch (and once more at the load, to check it).
#
# Most of the peak is the shared libraries' pages (a CUDA build maps cuBLAS;
# the baseline line is the peak of `dcz --version`, measured in the same
# run), so the peak above that baseline, about the memory the run itself
# takes (about: the two need not touch the same pages of the libraries),
# is printed and compared too. More counts (up to 60,000, the train split)
# make the growth of the in-memory path plainer.
#
# A measurement, not a test: nothing is asserted; the goal is a folder
# ratio within 10%. Needs Debian's dataset-fashion-mnist, bin/dcz and
# build/tests/idx2png (make; make build/tests/idx2png).
#
#   bash bench/stream_memory.sh [THREADS [COUNT...]]   (default: all cores; 1000 10000)
set -u
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
shift $(($# > 0 ? 1 : 0))
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 10000)
for n in "${counts[@]}"; do
    [ $((n % 10)) -eq 0 ] && [ "$n" -ge 10 ] && [ "$n" -le 60000 ] ||
        { echo "stream_memory: $n: give multiples of 10 from 10 to 60000" >&2; exit 1; }
done
dcz=bin/dcz
idx2png=build/tests/idx2png
fm=/usr/share/datasets/fashion-mnist
for f in "$dcz" "$idx2png" /usr/bin/time; do
    [ -x "$f" ] || { echo "stream_memory: $f is missing (make; make build/tests/idx2png)" >&2; exit 1; }
done
[ -f "$fm/train-images-idx3-ubyte.gz" ] || { echo "stream_memory: SKIP (no $fm: apt-get install dataset-fashion-mnist)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# a 32-bit big-endian count, as IDX headers hold it
be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))"; \
         printf "\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
# idx DIR PREFIX SRC N: the first N samples of Fashion-MNIST's SRC split as DIR/PREFIX-*
idx() {
    { printf '\x00\x00\x08\x03'; be32 "$4"; be32 28; be32 28
      gzip -dc "$fm/$3-images-idx3-ubyte.gz" | tail -c +17 | head -c $(($4 * 784)); } > "$1/$2-images-idx3-ubyte"
    { printf '\x00\x00\x08\x01'; be32 "$4"
      gzip -dc "$fm/$3-labels-idx1-ubyte.gz" | tail -c +9 | head -c "$4"; } > "$1/$2-labels-idx1-ubyte"
}

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
echo "== peak memory of one epoch of dcz train --arch lenet5, $threads threads, on $cpu ($(nproc) CPUs)"
# run DATA: "peak_kb seconds" of one epoch on DATA
run() {
    /usr/bin/time -f '%M %e' -o "$tmp/time" "$dcz" train --arch lenet5 --epochs 1 --data "$1" \
        --threads "$threads" -q -o "$tmp/m.dcz" 2> "$tmp/err" ||
        { cat "$tmp/err" "$tmp/time" >&2; echo "stream_memory: dcz train failed on $1" >&2; exit 1; }
    tail -n 1 "$tmp/time"
}
base=$(/usr/bin/time -f %M "$dcz" --version 2>&1 > /dev/null | tail -n 1)
printf '%-8s %8s %14s %12s %14s %10s\n' data images "floats (MiB)" "peak (MiB)" "above (MiB)" "time (s)"
awk -v kb="$base" 'BEGIN { printf "%-8s %8s %14s %12.1f %14s %10s\n", "baseline", "-", "-", kb / 1024, "-", "-" }'
declare -A peak
for n in "${counts[@]}"; do
    mkdir -p "$tmp/idx$n"
    idx "$tmp/idx$n" train train $n
    idx "$tmp/idx$n" t10k t10k 100
    "$idx2png" fashion-mnist "$tmp/png$n" $((n / 10)) 10 > /dev/null || { echo "stream_memory: idx2png failed" >&2; exit 1; }
    got=$(find "$tmp/png$n/train" -name '*.png' | wc -l)
    [ "$got" -eq "$n" ] || { echo "stream_memory: $got images written, not $n" >&2; exit 1; }
    for kind in png idx; do
        read -r kb secs <<< "$(run "$tmp/$kind$n")"
        peak[$kind$n]=$kb
        awk -v k="$( [ $kind = png ] && echo folder || echo IDX)" -v n=$n -v kb="$kb" -v b="$base" -v s="$secs" 'BEGIN {
            printf "%-8s %8d %14.1f %12.1f %14.1f %10.2f\n", k, n, n * 784 * 4 / 1048576, kb / 1024, (kb - b) / 1024, s }'
    done
    rm -rf "$tmp/png$n" "$tmp/idx$n"
done
lo=${counts[0]}
hi=${counts[${#counts[@]} - 1]}
for kind in png idx; do
    awk -v k="$( [ $kind = png ] && echo "folder (streams)" || echo "IDX (in memory)")" -v lo=$lo -v hi=$hi \
        -v a="${peak[$kind$lo]}" -v b="${peak[$kind$hi]}" -v z="$base" 'BEGIN {
        printf "%-17s peak at %d / at %d: %.1f / %.1f MiB = %.3f (%+.1f%%); above the baseline %.1f / %.1f MiB\n",
               k ":", hi, lo, b / 1024, a / 1024, b / a, 100 * (b / a - 1), (b - z) / 1024, (a - z) / 1024 }'
done
