#!/usr/bin/env bash
# plan.sh: how close the plan's rules come to the fastest kernel on this
# CPU: each model of bench/models.sh (dense, compressed, int8) loaded with
# --plan measure, which times every candidate kernel of each layer at load
# (dcz info --json, batch 1, ROUNDS loads, each candidate's best time); per
# layer with more than one candidate, the rules' kernel, the fastest and
# the ratio (above 1: the rules' slower), and per model the layers' sum
# under the rules over the sum under the fastest; then whole-model latency
# (dcz bench median) by the rules and by a measured plan, at batch 1 and 64,
# in alternated rounds. Reported, never asserted.
#
#   bash bench/plan.sh [MODELS]   (default: cnn resnet mobilenetv2 lenet5)
#   DCZ=PATH: another dcz binary (default bin/dcz)
#   ROUNDS=N (default 3), RUNS=N timed runs of dcz bench at batch 1
#   (default 2000; RUNS / 20 at batch 64), WHOLE=0: the layers alone
#
# A layer of under 2 us is listed but left out of the worst ratio: its
# time is near the clock's resolution and the run's own overhead.
#
# One thread; time with nothing else running.
set -u
cd "$(dirname "$0")/.."
models=${1:-cnn resnet mobilenetv2 lenet5}
rounds=${ROUNDS:-3}
runs=${RUNS:-2000}
runs64=$((runs / 20 > 20 ? runs / 20 : 20))
case $rounds in ''|*[!0-9]*|0) echo "plan: ROUNDS must be a positive integer, not '$rounds'" >&2; exit 1 ;; esac
dcz=${DCZ:-bin/dcz}
export OPENBLAS_NUM_THREADS=1
[ -x "$dcz" ] || { echo "plan: build $dcz first (make)" >&2; exit 1; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
. bench/models.sh

field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }
middle() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }

echo "== the rules' kernels against the fastest candidate timed at load, one thread, batch 1, best of $rounds loads"
echo "   CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
worst=1
for m in $models; do
    make_model "$m" > /dev/null || { echo "plan: cannot make $m" >&2; exit 1; }
    for v in "$m-dense" "$m" "$m-int8"; do
        for k in $(seq "$rounds"); do
            "$dcz" info "$w/$v.dcz" --plan measure --threads 1 --json > "$w/$v.$k.json" || exit 1
        done
        out=$(python3 - "$v" "$w" "$rounds" <<'PY'
import json, sys
v, w, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
best = {}   # (layer, kernel) -> best us over the loads
order = {}
for k in range(1, rounds + 1):
    for l in json.load(open(f"{w}/{v}.{k}.json"))["layers"]:
        for c in l.get("kernel_timed", []):
            key = (l["name"], c["kernel"])
            best[key] = min(best.get(key, float("inf")), c["us"])
            order.setdefault(l["name"], [])
            if c["kernel"] not in order[l["name"]]: order[l["name"]].append(c["kernel"])
rules_sum = fast_sum = 0.0
worst = 1.0
for name, ks in order.items():
    r = best[(name, ks[0])]
    f = min(ks, key=lambda k: best[(name, k)])
    rules_sum += r
    fast_sum += best[(name, f)]
    ratio = r / best[(name, f)] if best[(name, f)] > 0 else 1.0
    if r >= 2.0: worst = max(worst, ratio)
    print(f"   {v:<18} {name:<8} {ks[0]:<36} {r:9.1f}  {f:<36} {best[(name, f)]:9.1f}  {ratio:5.2f}x")
if order:
    print(f"   {v:<18} {'all':<8} {'(the layers timed)':<36} {rules_sum:9.1f}  {'':<36} {fast_sum:9.1f}  "
          f"{rules_sum / fast_sum if fast_sum else 1:5.2f}x  worst layer of 2 us or more {worst:.2f}x")
print(f"WORST {worst}")
PY
) || exit 1
        echo "$out" | grep -v '^WORST'
        wv=$(echo "$out" | sed -n 's/^WORST //p')
        worst=$(awk -v a="$worst" -v b="$wv" 'BEGIN { print (b > a ? b : a) }')
    done
done
printf '   worst layer of 2 us or more over all models: the rules %.2fx the fastest\n' "$worst"
[ "${WHOLE:-1}" = 0 ] && exit 0

echo
echo "== whole-model latency, median us of dcz bench (batch 1: $runs runs, 64: $runs64), medians of $rounds" \
     "alternated rounds; rules / measure above 1: the measured plan faster"
printf '   %-20s %10s %10s %7s %10s %10s %7s\n' model "b1 rules" "b1 meas." ratio "b64 rules" "b64 meas." ratio
for m in $models; do
    for v in "$m-dense" "$m" "$m-int8"; do
        declare -A med=()
        for k in $(seq "$rounds"); do
            for b in 1 64; do
                r=$runs; [ $b = 64 ] && r=$runs64
                for p in rules measure; do
                    med[$p.$b.$k]=$("$dcz" bench "$w/$v.dcz" --batch $b --threads 1 --runs "$r" --warmup 20 \
                        --loads 1 --device cpu --plan $p --json | field median_us) || exit 1
                done
            done
        done
        row=()
        for b in 1 64; do
            for p in rules measure; do
                a=(); for k in $(seq "$rounds"); do a+=("${med[$p.$b.$k]}"); done
                row+=("$(middle "${a[@]}")")
            done
        done
        printf '   %-20s %10.1f %10.1f %6.2fx %10.1f %10.1f %6.2fx\n' "$v" "${row[0]}" "${row[1]}" \
            "$(awk -v a="${row[0]}" -v b="${row[1]}" 'BEGIN { print a / b }')" "${row[2]}" "${row[3]}" \
            "$(awk -v a="${row[2]}" -v b="${row[3]}" 'BEGIN { print a / b }')"
        unset med
    done
done
