#!/usr/bin/env bash
# plan.sh: --plan measure on the verbs that run models (info, run, bench):
# dcz info lists each layer's timed candidates, the rules' first, and runs
# the fastest (text and JSON agree, the kernel kept is the least time);
# run gives the rules' top classes (a float model within rounding, an int8
# model the same bytes); bad values and --device gpu are usage errors.
. "$(dirname "$0")/lib.bash"
F="$ROOT/tests/fixtures/v1"

for m in cnn-codebook cnn-int8; do
    expect 0 "$DCZ" info "$F/$m.dcz" --plan measure
    grep -q "timed at load: .*(the rules')" "$T/out" || fail "$m: no timed layer in dcz info --plan measure"
    [ "$(grep 'timed at load:' "$T/out" | grep -c '(kept)')" = "$(grep -c 'timed at load:' "$T/out")" ] ||
        fail "$m: a timed layer keeps no candidate"
    expect 0 "$DCZ" info "$F/$m.dcz" --plan measure --json
    # each timed layer: kernel, kernel_timed [{kernel, us}...], kernel_rules
    timed=0
    while IFS= read -r l; do
        kernel=$(sed -n 's/.*"kernel":"\([^"]*\)","kernel_reason".*/\1/p' <<< "$l")
        rules=$(sed -n 's/.*"kernel_rules":"\([^"]*\)".*/\1/p' <<< "$l")
        cands=$(grep -o '{"kernel":"[^"]*","us":[0-9.e+-]*}' <<< "$l" | sed 's/{"kernel":"\([^"]*\)","us":\([^}]*\)}/\2 \1/')
        first=$(head -n 1 <<< "$cands" | cut -d' ' -f2-)
        fastest=$(sort -g <<< "$cands" | head -n 1 | cut -d' ' -f2-)
        least=$(sort -g <<< "$cands" | head -n 1 | cut -d' ' -f1)
        [ "$(wc -l <<< "$cands")" -ge 2 ] || fail "$m: a timed layer of one candidate: $l"
        [ "$rules" = "$first" ] || fail "$m: kernel_rules '$rules', the first timed '$first'"
        # the kernel kept: one of least time (a tie may keep either)
        kt=$(grep -F " $kernel" <<< "$cands" | head -n 1 | cut -d' ' -f1)
        [ -n "$kt" ] && awk -v a="$kt" -v b="$least" 'BEGIN { exit !(a == b) }' ||
            fail "$m: runs '$kernel' ($kt us), the fastest is '$fastest' ($least us)"
        timed=$((timed + 1))
    done < <(sed 's/{"name":/\n&/g' "$T/out" | grep '"kernel_rules"')
    [ "$timed" -ge 1 ] || fail "$m: no kernel_timed in dcz info --plan measure --json"

    # the rules' top classes and scores
    expect 0 "$DCZ" run "$F/$m.dcz" --data fashion-mnist --count 8 --top 3 --device cpu -o "$T/rules.f32"
    expect 0 "$DCZ" run "$F/$m.dcz" --data fashion-mnist --count 8 --top 3 --device cpu --plan measure \
        -o "$T/measured.f32"
    if [ "$m" = cnn-int8 ]; then
        cmp -s "$T/rules.f32" "$T/measured.f32" || fail "$m: the measured plan changed an int8 model's outputs"
    else
        od -An -v -f "$T/rules.f32" > "$T/a.txt" && od -An -v -f "$T/measured.f32" > "$T/b.txt"
        paste <(tr -s ' ' '\n' < "$T/a.txt" | grep .) <(tr -s ' ' '\n' < "$T/b.txt" | grep .) |
            awk '{ d = $1 - $2; if (d < 0) d = -d; a = $1 < 0 ? -$1 : $1; if (d > 1e-4 * (1 + a)) bad++ }
                 END { exit bad > 0 }' || fail "$m: the measured plan's outputs differ from the rules' past rounding"
    fi
done
# the candidates are timed on the threads asked for
for t in 1 2; do
    expect 0 "$DCZ" info "$F/cnn-codebook.dcz" --plan measure --threads $t --json
    n=$(grep -o '"kernel_timed_threads":[0-9]*' "$T/out" | sort -u)
    [ "$n" = "\"kernel_timed_threads\":$t" ] || fail "info --plan measure --threads $t timed on: ${n:-none}"
done
expect 0 "$DCZ" info "$F/cnn-codebook.dcz" --plan measure --threads 1
grep -q "kernels timed on 1 thread (--threads):" "$T/out" || fail "info --plan measure --threads 1 names no threads"
expect 0 "$DCZ" bench "$F/cnn-codebook.dcz" --plan measure --runs 5 --loads 1 --device cpu --json
expect 0 "$DCZ" bench "$F/cnn-codebook.dcz" --plan rules --runs 5 --loads 1 --device cpu

expect 1 "$DCZ" info "$F/cnn-codebook.dcz" --plan fastest
grep -q -- "--plan must be rules or measure, not 'fastest'" "$T/err" || fail "bad --plan: $(cat "$T/err")"
# a usage error where there is a GPU; without one, --device gpu fails first (exit 4)
"$DCZ" run "$F/cnn-codebook.dcz" --data fashion-mnist --count 1 --plan measure --device gpu > "$T/out" 2> "$T/err"
rc=$?
{ [ $rc = 1 ] && grep -q -- "--plan measure times the CPU's kernels" "$T/err"; } || [ $rc = 4 ] ||
    fail "--plan measure --device gpu: exit $rc, $(cat "$T/err")"
echo "plan: ok"
