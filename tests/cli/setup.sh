#!/usr/bin/env bash
# The set-up a bare machine relies on (README.md, "Two commands"): make
# test, make demo and make bench really run the dependency check
# (scripts/deps.sh) unless DEPS=0 asks them not to; no Makefile toggle
# keeps a trailing comment's spaces in its value (GNU make does, and
# `DEPS ?= 1   # ...` once made every check silently skip); .ci/run runs the
# README's test command. The check is shown able to fail: the same probe on
# a copy of the Makefile with that old fault put back must report it.
source "$(dirname "$0")/lib.bash"
cd "$ROOT"
# make as a user types it: no flags or variables inherited from the make
# that runs this test (make test DEPS=0 must not leak in)
plain_make() { env -u MAKEFLAGS -u MFLAGS -u MAKEOVERRIDES -u MAKELEVEL -u DEPS make "$@"; }
# runs_deps MAKEFILE TARGET [VAR=VALUE...]: make -n TARGET would run deps.sh.
# The Makefile is read in a folder of its own, so that its defaults are what
# is probed, not a config.mk that ./configure wrote here (make -n prints the
# recipe whatever the folder holds; what the recursive make then misses is
# of no interest).
runs_deps() {
    local mk=$1 target=$2; shift 2
    rm -rf "$T/probe"; mkdir "$T/probe"; cp "$mk" "$T/probe/Makefile"
    (cd "$T/probe" && plain_make -n "$@" "$target" 2> "$T/make.err") | grep -q 'scripts/deps.sh'
}
for target in test demo bench; do
    runs_deps Makefile $target || { cat "$T/make.err" >&2; fail "make -n $target does not run scripts/deps.sh"; }
    runs_deps Makefile $target DEPS=0 && fail "make -n $target DEPS=0 still runs scripts/deps.sh"
    echo "ok: make $target runs the dependency check, and DEPS=0 skips it"
done

# every toggle (VAR ?= value) stands alone on its line
bad=$(grep -nE '^[A-Za-z_][A-Za-z0-9_]* *\?=.*#' Makefile || true)
[ -z "$bad" ] || fail "a Makefile toggle carries a comment on its line (its spaces become part of the value):
$bad"
echo "ok: no toggle carries a trailing comment"

# the probe catches the fault it guards against
sed -e 's/^\(DEPS *?= *1\)$/\1         # 0: do not check/' -e 's/^ifeq (\$(strip \$(DEPS)),1)$/ifeq ($(DEPS),1)/' \
    Makefile > "$T/Makefile.broken"
cmp -s Makefile "$T/Makefile.broken" && fail "could not put the old fault back into a copy of the Makefile (its DEPS lines changed form)"
runs_deps "$T/Makefile.broken" test && fail "the probe does not notice a dependency check that never runs"
echo "ok: a Makefile whose DEPS toggle keeps a comment's spaces is caught"

# .ci/run runs the README's test command, the dependency check included
readme_test=$(awk '/^## Two commands/ { s = 1; next } s && /^```/ { if (b) exit; b = 1; next }
                   s && b { sub(/[ \t]*#.*/, ""); print }' README.md | grep -E 'make test$' | head -n 1)
[ -n "$readme_test" ] || fail "README.md's '## Two commands' block shows no test command"
grep -qxF "$readme_test" .ci/run || fail ".ci/run does not run the README's test command '$readme_test'"
case "$readme_test" in
    ./configure*) grep -q 'scripts/deps.sh' configure || fail "./configure does not run scripts/deps.sh" ;;
esac
echo "ok: .ci/run runs '$readme_test'"
