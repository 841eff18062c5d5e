#!/usr/bin/env bash
# profile.sh: where a model's time goes on this CPU, from dcz bench
# --per-layer: each operator's layers, time and share, then the slowest
# layers with their kernels and output widths. Run with nothing else
# running; timings are reported, never asserted.
#
#   bash bench/profile.sh [--batch N] [--runs R] [--threads T] FILE.dcz ...
#
# Needs jq (a dependency of the build: scripts/deps.sh).
set -eu
cd "$(dirname "$0")/.."
DCZ=${DCZ:-./bin/dcz}
batch=1 runs=50 threads=1
while [ $# -gt 0 ]; do
    case $1 in
    --batch) batch=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: bash bench/profile.sh [--batch N] [--runs R] [--threads T] FILE.dcz ..." >&2; exit 1; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "CPU: ${cpu:-unknown}; batch $batch, $threads thread(s), median of $runs runs a layer"
for f in "$@"; do
    json=$("$DCZ" bench "$f" --device cpu --batch "$batch" --threads "$threads" --runs "$runs" --per-layer --json -q)
    echo
    echo "$f: $(jq -r '"run median \(.median_us | . * 10 | round / 10) us, layers sum \([.layers[].median_us] | add | . * 10 | round / 10) us"' <<< "$json")"
    printf '  %-18s %7s %11s %7s\n' op layers us share
    jq -r '.layers | group_by(.op) | map({op: .[0].op, n: length, us: (map(.median_us) | add),
            share: (map(.share) | add)}) | sort_by(-.us)[] |
            "\(.op) \(.n) \(.us | . * 10 | round / 10) \(.share * 1000 | round / 10)"' <<< "$json" |
        while read -r op n us share; do printf '  %-18s %7s %11s %6s%%\n' "$op" "$n" "$us" "$share"; done
    printf '  slowest layers:\n'
    jq -r '.layers | sort_by(-.median_us)[:8][] |
            "\(.name) \(.op) \(.kernel | gsub(" "; "_")) \(.out) \(.median_us | . * 10 | round / 10) \(.share * 1000 | round / 10)"' \
        <<< "$json" |
        while read -r name op kernel out us share; do
            printf '    %-24s %-15s %-32s %9s %9s us %5s%%\n' "$name" "$op" "$kernel" "$out" "$us" "$share"
        done
done
