#!/usr/bin/env bash
# Output paths as docs/CLI.md states them: a regular file is replaced whole
# (keeping its mode), through any links (which stay); a device, FIFO or
# pipe is written through and stays what it is; an output that cannot be
# written is refused before any work; every read or write failure names
# the system's reason and what to do.
source "$(dirname "$0")/lib.bash"
"$DCZ" train --arch mlp:784-8-10 --epochs 1 --data fashion-mnist -q -o "$T/m.dcz" || fail "train"
prune() { "$DCZ" prune "$T/m.dcz" --sparsity 0.5 -q "$@"; }

# a FIFO is written through and stays a FIFO
mkfifo "$T/fifo"
cat "$T/fifo" > "$T/from-fifo" &
reader=$!
prune -o "$T/fifo" || fail "writing a FIFO"
wait $reader
[ -p "$T/fifo" ] || fail "the FIFO was replaced"
"$DCZ" info "$T/from-fifo" > /dev/null || fail "the FIFO's reader got no model"

# process substitution (/dev/fd/N, a pipe)
prune -o >(wc -c > "$T/count") || fail "writing to >(...)"
for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$T/count" ] && break; sleep 0.2; done
[ "$(cat "$T/count")" -gt 1000 ] || fail "the pipe got $(cat "$T/count") bytes"

# device nodes of its own (root only): written through, kept; a full
# device says why it failed
if mknod "$T/null" c 1 3 2> /dev/null && mknod "$T/full" c 1 7 2> /dev/null; then
    prune -o "$T/null" || fail "writing a null device"
    [ -c "$T/null" ] || fail "the device node was replaced by a regular file"
    expect 3 prune -o "$T/full"
    grep -q 'No space left on device' "$T/err" || fail "no reason for a full device: $(cat "$T/err")"
    [ -c "$T/full" ] || fail "the full device node was replaced"
else
    echo "SKIP device nodes: mknod needs root"
fi

# a link stays a link; its target gets the output and keeps its mode
mkdir "$T/sub"
ln -s sub/target.dcz "$T/link.dcz"
prune -o "$T/link.dcz" || fail "writing through a dangling link"
[ -L "$T/link.dcz" ] && [ "$(readlink "$T/link.dcz")" = sub/target.dcz ] || fail "the link was replaced"
"$DCZ" info "$T/sub/target.dcz" > /dev/null || fail "the link's target holds no model"
chmod 600 "$T/sub/target.dcz"
echo old > "$T/sub/target.dcz"
ln "$T/sub/target.dcz" "$T/hard.dcz"
prune -o "$T/link.dcz" || fail "replacing through a link"
[ -L "$T/link.dcz" ] || fail "the link was replaced the second time"
[ "$(stat -c %a "$T/sub/target.dcz")" = 600 ] || fail "mode $(stat -c %a "$T/sub/target.dcz"), not 600"
"$DCZ" info "$T/sub/target.dcz" > /dev/null || fail "the target was not replaced"
[ "$(cat "$T/hard.dcz")" = old ] || fail "another hard link saw the new contents"
# as root, a replaced file keeps its owner too
if [ "$(id -u)" = 0 ]; then
    chown 4321:4321 "$T/sub/target.dcz"
    prune -o "$T/link.dcz" || fail "replacing a file of another owner"
    [ "$(stat -c %u:%g "$T/sub/target.dcz")" = 4321:4321 ] || fail "owner $(stat -c %u:%g "$T/sub/target.dcz")"
else
    echo "SKIP keeping the owner: needs root"
fi
ln -s loop1 "$T/loop2"; ln -s loop2 "$T/loop1"
expect 3 prune -o "$T/loop1"
grep -q 'symbolic links' "$T/err" || fail "no reason for a link loop: $(cat "$T/err")"

# reasons for reads, and outputs refused before any work
expect 2 "$DCZ" info "$T/nothing.dcz"
grep -q 'No such file or directory' "$T/err" || fail "missing input: $(cat "$T/err")"
expect 2 "$DCZ" info "$T"
grep -q 'Is a directory' "$T/err" || fail "folder as input: $(cat "$T/err")"
expect 2 "$DCZ" info "$T/m.dcz/x"
grep -q 'Not a directory' "$T/err" || fail "file as folder: $(cat "$T/err")"
expect 3 "$DCZ" train --arch mlp:784-64-10 --epochs 50 --data fashion-mnist -o "$T/none/x.dcz"
grep -q "cannot write $T/none/x.dcz: No such file or directory (the folder must exist)" "$T/err" ||
    fail "unwritable output: $(cat "$T/err")"
! grep -q epoch "$T/err" || fail "trained before refusing the output"
expect 3 prune -o "$T"
grep -q 'Is a directory' "$T/err" || fail "folder as output: $(cat "$T/err")"
ls "$T" | grep -q '\.tmp\.' && fail "a temporary file was left: $(ls "$T")"
echo "outputs ok"
