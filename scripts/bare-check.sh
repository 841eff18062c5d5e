#!/usr/bin/env bash
# bare-check.sh: proves that the README's two commands work on a bare
# machine. It debootstraps a minimal Debian (minbase) of this host's release
# into a cache folder outside the source tree, installs git alone in it,
# and then, once per command, in a fresh copy of that system: clones the
# committed HEAD of this repository and runs the README's command there as
# root, with nothing else installed. It prints PASS or FAIL and the time of
# each, and the number of packages the command installed.
#
#   bash scripts/bare-check.sh        (or: make test-bare)
#
# Needs root (debootstrap, chroot, mounts), the network to Debian's mirror
# and some minutes; the base system is built once and reused (delete the
# cache folder to build it anew). Not part of make test.
#
# Environment:
#   DCZ_BARE_CACHE   the cache folder (default ~/.cache/dcz-bare)
#   DCZ_BARE_MIRROR  the Debian mirror (default http://deb.debian.org/debian)
#   DCZ_BARE_ONLY    test or demo: run that command alone; ci: run .ci/run
#                    alone; none: only build the base system
#   DCZ_BARE_WITH    Debian packages installed into each fresh copy before
#                    the command, e.g. "make gcc" for a machine that has the
#                    build tools but none of the libraries
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "bare-check: $*" >&2; exit 1; }
only=${DCZ_BARE_ONLY:-}
case "$only" in ""|test|demo|ci|none) ;; *) die "DCZ_BARE_ONLY is test, demo, ci or none, not '$only'" ;; esac
with=${DCZ_BARE_WITH:-}
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts); run it as root or with sudo"
. /etc/os-release
[ "${ID:-}" = debian ] || die "builds a Debian chroot of the host's release, and this host is ${ID:-unknown}"
release=${VERSION_CODENAME:?/etc/os-release names no release}
mirror=${DCZ_BARE_MIRROR:-http://deb.debian.org/debian}
cache=${DCZ_BARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dcz-bare}/$release
case "$cache/" in "$src"/*) die "the cache folder $cache is inside the source tree; set DCZ_BARE_CACHE elsewhere" ;; esac
mkdir -p "$cache/logs"
base=$cache/base run=$cache/run

# The commands, as the README shows them: the code block under "## Two
# commands", one line each, comments dropped.
readme_cmd() { # make target
    awk '/^## Two commands/ { s = 1; next } s && /^```/ { if (b) exit; b = 1; next }
         s && b { sub(/[ \t]*#.*/, ""); print }' "$src/README.md" | grep -E "make $1\$" | head -n 1
}
cmd_test=$(readme_cmd test) cmd_demo=$(readme_cmd demo)
[ -n "$cmd_test" ] && [ -n "$cmd_demo" ] || die "README.md's '## Two commands' block has no 'make test' or 'make demo' line"

head=$(git -C "$src" rev-parse --short HEAD)
[ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] ||
    echo "bare-check: note: uncommitted changes are not part of the check (it clones HEAD, $head)"

# A mounted folder must never be deleted through: every removal checks that
# nothing is mounted below it first.
mounted_below() { awk -v d="$1/" '{ if (index($2 "/", d) == 1) n++ } END { exit n ? 0 : 1 }' /proc/mounts; }
remove_tree() {
    [ -e "$1" ] || return 0
    if mounted_below "$1"; then die "$1 still has mounts below it; unmount them (grep $1 /proc/mounts) and run again"; fi
    rm -rf --one-file-system "$1"
}
unmount_run() {
    local m
    for m in dev/pts dev proc sys; do
        if mountpoint -q "$run/$m"; then umount "$run/$m" || umount -l "$run/$m"; fi
    done
}
trap 'unmount_run' EXIT

# ---- the base system: minbase and git, built once ----------------------------
if [ ! -f "$base/.dcz-bare-ok" ]; then
    if ! command -v debootstrap > /dev/null 2>&1; then
        echo "bare-check: installing debootstrap on the host (log: $cache/logs/host-apt.log)"
        { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap; } \
            > "$cache/logs/host-apt.log" 2>&1 || die "could not install debootstrap (see $cache/logs/host-apt.log)"
    fi
    remove_tree "$base"
    t0=$SECONDS
    echo "bare-check: debootstrap --variant=minbase $release (log: $cache/logs/debootstrap.log)"
    debootstrap --variant=minbase "$release" "$base" "$mirror" > "$cache/logs/debootstrap.log" 2>&1 ||
        die "debootstrap failed (see $cache/logs/debootstrap.log)"
    cp /etc/resolv.conf "$base/etc/resolv.conf"
    # git alone, then the package lists dropped, as a fresh image has none
    chroot "$base" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends git ca-certificates &&
               apt-get clean && rm -rf /var/lib/apt/lists/*' >> "$cache/logs/debootstrap.log" 2>&1 ||
        die "installing git in the chroot failed (see $cache/logs/debootstrap.log)"
    touch "$base/.dcz-bare-ok"
    echo "bare-check: base system ready in $((SECONDS - t0)) s ($base)"
fi
echo "bare-check: $release minbase with git ($(chroot "$base" dpkg-query -W -f '.\n' | wc -l) packages), HEAD $head"

bundle=$(mktemp "$cache/head.XXXXXX.bundle")
git -C "$src" bundle create "$bundle" HEAD 2> /dev/null || die "git bundle of HEAD failed"

# ---- each command in a fresh copy of the base ------------------------------
fails=0
check() { # name, command
    local name=$1 cmd=$2 log=$cache/logs/$1.log t0 rc secs pkgs verdict
    unmount_run; remove_tree "$run"
    cp -a "$base" "$run"
    cp "$bundle" "$run/root/dcz.bundle"
    mount -t proc proc "$run/proc"; mount -t sysfs sys "$run/sys"
    mount --bind /dev "$run/dev"; mount --bind /dev/pts "$run/dev/pts"
    if [ -n "$with" ]; then
        chroot "$run" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
            sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends $with" > "$log.with" 2>&1 ||
            die "installing $with in the copy failed (see $log.with)"
        echo "bare-check: $name: the copy has $with installed beforehand"
    fi
    t0=$SECONDS
    set +e
    chroot "$run" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        bash -c "cd /root && git -c advice.detachedHead=false clone -q dcz.bundle dcz && cd dcz && $cmd" > "$log" 2>&1 < /dev/null
    rc=$?
    set -e
    secs=$((SECONDS - t0))
    pkgs=$(grep -hoE '[0-9]+ newly installed' "$run/root/dcz/build/deps.log" 2> /dev/null | grep -oE '^[0-9]+' | head -n 1)
    verdict=PASS
    [ "$rc" -eq 0 ] || verdict="FAIL (exit $rc)"
    if [ "$name" = demo ] && [ "$rc" -eq 0 ] && ! grep -q 'demo: .* s; files in' "$log"; then
        verdict="FAIL (no closing line)"
    fi
    printf 'bare-check: %-5s %-28s %s in %dm%02ds (%s; %s)\n' "$name" "$cmd" "$verdict" $((secs / 60)) $((secs % 60)) \
        "${pkgs:-no} packages installed" "$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 || true)"
    if [ "$verdict" != PASS ]; then
        fails=$((fails + 1)); tail -n 25 "$log" | sed 's/^/    /'
    fi
    echo "    log: $log"
    unmount_run; remove_tree "$run"
}
case "$only" in ""|test) check test "$cmd_test" ;; esac
case "$only" in ""|demo) check demo "$cmd_demo" ;; esac
case "$only" in ci) check ci "bash .ci/run" ;; esac
rm -f "$bundle"
[ "$fails" -eq 0 ] && echo "bare-check: PASS" || { echo "bare-check: FAIL"; exit 1; }
