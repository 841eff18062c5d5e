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
