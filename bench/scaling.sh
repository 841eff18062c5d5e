#!/usr/bin/env bash
# scaling.sh: data-parallel retraining, measured in one run: samples per
# second of one LeNet-5 training epoch on Fashion-MNIST (60,000 samples,
# batch 64, 2 shards, so every run does the same arithmetic and writes the
# same model) at
#   1 rank  x 1 thread   (the baseline)
#   2 ranks x 1 thread   (mpirun -np 2)
#   1 rank  x 2 threads
# with, for the 2-rank run, the time each step spends in the gradient sum
# (waiting for the other rank included) and the bytes each rank sends per
# step, and what those bytes would cost between nodes. Run it with nothing
# else running: on a machine whose vCPUs share a core, a second busy
# process halves a single-thread timing. SKIP without an MPI build or mpirun.
#
#   bash bench/scaling.sh
set -u
cd "$(dirname "$0")/.."
dcz=bin/dcz
[ -x $dcz ] || { echo "scaling: build $dcz first (make)" >&2; exit 1; }
echo "== data-parallel retraining: one LeNet-5 epoch (60,000 samples, batch 64, 2 shards)"
if ! $dcz --version | grep -q '^MPI: Open MPI'; then
    echo "SKIP: $($dcz --version | sed -n 's/^MPI: //p')"; exit 0
fi
command -v mpirun > /dev/null || { echo "SKIP: no mpirun (Debian: openmpi-bin)"; exit 0; }
command -v jq > /dev/null || { echo "SKIP: no jq (Debian: jq)"; exit 0; }
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
args=(train --arch lenet5 --epochs 1 --shards 2 --data fashion-mnist -q --json)
# NAME NP THREADS: one run's JSON in $tmp/NAME.json
run() {
    (cd "$tmp" && mpirun --oversubscribe --bind-to none --mca btl self,vader -np "$2" "$OLDPWD/$dcz" \
        "${args[@]}" --threads "$3" -o "$1.dcz" > "$1.json" 2> "$1.err") ||
        { cat "$tmp/$1.err"; echo "scaling: the $1 run failed"; exit 1; }
}
run r1t1 1 1
run r2t1 2 1
run r1t2 1 2
sps() { jq -r '.train_samples / .epoch_seconds' "$tmp/$1.json"; }
base=$(sps r1t1)
printf '%-22s %12s %12s %10s\n' "run" "epoch (s)" "samples/s" "vs 1x1"
for r in "r1t1:1 rank  x 1 thread" "r2t1:2 ranks x 1 thread" "r1t2:1 rank  x 2 threads"; do
    n=${r%%:*}
    printf '%-22s %12.2f %12.0f %9.2fx\n' "${r#*:}" "$(jq .epoch_seconds "$tmp/$n.json")" "$(sps $n)" \
        "$(awk -v a="$(sps $n)" -v b="$base" 'BEGIN { print a / b }')"
done
awk -v a="$(sps r2t1)" -v b="$(sps r1t2)" \
    'BEGIN { printf "2 ranks x 1 thread / 1 rank x 2 threads: %.2f (1 or more: ranks scale as well as threads)\n", a / b }'
jq -r '.mpi as $m | ($m.sum_seconds / $m.sums * 1000) as $ms | (.epoch_seconds / $m.sums * 1000) as $step |
       "gradient sum per step (2 ranks): \($ms * 1000 | round / 1000) ms of a \($step * 100 | round / 100) ms step (\($ms / $step * 1000 | round / 10)%), \($m.bytes_per_sum | round) bytes per rank",
       "between nodes (ring all-reduce: each rank sends and receives 2(N-1)/N of those bytes per step): at 10 Gbit/s \($m.bytes_per_sum * 8 / 10e9 * 1e6 | round / 1000) ms per step for N = 2, below \($m.bytes_per_sum * 2 * 8 / 10e9 * 1e6 | round / 1000) ms for any N"' \
    "$tmp/r2t1.json"
hash() { $dcz info "$tmp/$1.dcz" --json | jq -r .model_hash; }
[ "$(hash r1t1)" = "$(hash r2t1)" ] || echo "scaling: 2 ranks trained another model than 1 rank (they must not)"
