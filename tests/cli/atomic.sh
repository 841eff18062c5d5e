#!/usr/bin/env bash
# Outputs appear whole or not at all; inputs are never modified; progress
# and notes stay off stdout, and nothing is drawn when stderr is no terminal;
# notes come as the work does.
source "$(dirname "$0")/lib.bash"
"$DCZ" train --arch mlp:784-16-10 --epochs 1 --data fashion-mnist -q -o "$T/m.dcz" || fail "train"
sum=$(md5sum < "$T/m.dcz")
"$DCZ" prune "$T/m.dcz" --sparsity 0.5 -o "$T/p.dcz" > "$T/stdout" 2> "$T/stderr" || fail "prune"
[ "$(md5sum < "$T/m.dcz")" = "$sum" ] || fail "the input was modified"
[ ! -s "$T/stdout" ] || fail "notes on stdout: $(cat "$T/stdout")"
! grep -q $'\r' "$T/stderr" || fail "a progress bar was drawn without a terminal"
"$DCZ" prune "$T/m.dcz" --sparsity 0.5 -q -o "$T/q.dcz" 2> "$T/stderr" || fail "prune quiet"
[ ! -s "$T/stderr" ] || fail "--quiet printed: $(cat "$T/stderr")"
# the output replaces an existing file only when complete
echo old > "$T/out.dcz"
"$DCZ" prune "$T/m.dcz" --sparsity 2 -q -o "$T/out.dcz" 2>/dev/null && fail "bad sparsity accepted"
[ "$(cat "$T/out.dcz")" = old ] || fail "a failed run touched the output"
# stages compose in pipes
"$DCZ" prune - --sparsity 0.5 -q -o - < "$T/m.dcz" | "$DCZ" quantize - --bits 2 -q -o "$T/piped.dcz" || fail "pipe"
"$DCZ" info "$T/piped.dcz" > /dev/null || fail "piped output"
# compress from stdin, reporting on stderr when the output is stdout
"$DCZ" compress - --data fashion-mnist --rounds 1 --prune-epochs 0 --final-epochs 0 --quant-epochs 0 \
    -q --json -o - < "$T/m.dcz" > "$T/c.dcz" 2> "$T/c.json" || fail "compress from stdin"
"$DCZ" info "$T/c.dcz" > /dev/null || fail "compress to stdout wrote no model"
grep -q '"ratio"' "$T/c.json" || fail "the JSON report did not go to stderr"
# an interrupted training leaves neither the output nor a temporary file
"$DCZ" train --arch mlp:784-256-10 --epochs 50 --data fashion-mnist -q -o "$T/int.dcz" &
pid=$!
sleep 2
kill -INT $pid
wait $pid 2>/dev/null
ls "$T" | grep -q 'int.dcz' && fail "interrupted run left $(ls "$T" | grep int.dcz)"
# each prune round's line is written when the round ends, not when the
# stage does: a log followed by tail -f, or kept from a killed run, has it
"$DCZ" prune "$T/m.dcz" --sparsity 0.8 --rounds 2 --prune-epochs 1 --final-epochs 40 \
    --data fashion-mnist -o "$T/long.dcz" 2> "$T/rounds.log" &
pid=$!
for i in $(seq 1 600); do
    grep -q 'prune round 1/2' "$T/rounds.log" && break
    kill -0 $pid 2> /dev/null || break
    sleep 0.1
done
grep -q 'prune round 1/2' "$T/rounds.log" || fail "no round line in the log: $(cat "$T/rounds.log")"
kill -0 $pid 2> /dev/null || fail "the round's line came only when the stage ended"
kill -INT $pid
wait $pid 2> /dev/null
echo "atomic ok"
