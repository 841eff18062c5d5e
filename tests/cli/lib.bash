# lib.bash: shared by the CLI tests (sourced, not run): paths, a scratch
# directory removed on exit, and small assertions that print what failed.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DCZ="$ROOT/bin/dcz"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect CODE CMD...: runs CMD, checks its exit code
expect() {
    local want=$1; shift
    "$@" > "$T/out" 2> "$T/err"
    local got=$?
    [ "$got" -eq "$want" ] || { cat "$T/err" >&2; fail "exit $got, expected $want: $*"; }
}
# json_field NAME FILE: the value of a top-level number or string field
json_field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$2" | head -n 1; }
# model_hash FILE: the model hash dcz info gives FILE (its graph and weights)
model_hash() { "$DCZ" info "$1" | sed -n 's/^model hash \([0-9a-f]*\).*/\1/p'; }
# reldiff A B: max |a - b| / max |b| over two raw float32 files of equal size
reldiff() {
    [ "$(stat -c %s "$1")" = "$(stat -c %s "$2")" ] || { echo 1e30; return; }
    paste <(od -An -v -tf4 -w4 "$1") <(od -An -v -tf4 -w4 "$2") | awk '{
        d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d
        t = $2 < 0 ? -$2 : $2; if (t > top) top = t }
        END { printf "%.3g\n", (top > 0 ? m / top : 1e30) }'
}
# fmnist_part TRAIN TEST: prints a folder (made once in $T) of the first
# TRAIN training and TEST test samples of Fashion-MNIST (scripts/
# fmnist-subset.sh), for tests that need a model trained on real images,
# not on all 70,000
fmnist_part() {
    local dir="$T/fmnist-$1-$2"
    [ -d "$dir" ] || bash "$ROOT/scripts/fmnist-subset.sh" "$dir" "$1" "$2" || fail "fmnist-subset.sh $1 $2"
    echo "$dir"
}
