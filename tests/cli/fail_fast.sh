#!/usr/bin/env bash
# Every option of every stage a verb will run, and where its outputs go,
# is checked before the first long step; training that diverges stops with
# a message and writes nothing; a failure always prints its line.
source "$(dirname "$0")/lib.bash"
"$DCZ" train --arch mlp:784-8-10 --epochs 1 --data fashion-mnist -q -o "$T/m.dcz" || fail "train"

# compress: each bad setting of a later stage is refused before pruning
while read -r code opt val want; do
    expect "$code" "$DCZ" compress "$T/m.dcz" --data fashion-mnist --rounds 1 --prune-epochs 5 \
        "--$opt" "$val" -o "$T/c.dcz"
    grep -q -- "$want" "$T/err" || fail "--$opt $val: $(cat "$T/err")"
    ! grep -q 'prune round\|accuracy' "$T/err" || fail "--$opt $val: pruned before refusing"
    [ ! -e "$T/c.dcz" ] || fail "--$opt $val wrote an output"
done <<'EOF'
1 bits 9 --bits: 9 for fc1
1 bits nothing=4 'nothing' matches no layer
1 init foo --init must be linear
1 kmeans-iters -5 --kmeans-iters
1 quant-epochs -1 --quant-epochs
1 quant-lr -1 --quant-lr must be > 0
1 prune-lr 0 --prune-lr must be > 0
1 gap-bits 9 --gap-bits: 9 for fc1
3 keep-stages /nonexistent/dir cannot write /nonexistent/dir/prune.dcz: No such file or directory
1 variational -2 --variational must be >= 0
1 variational-threshold 2 give --variational N too
1 variational-kl 0.5 --variational-kl applies to the variational phase
1 variational-kl 0 --variational-kl must be in (0, 10]
1 variational-kl 11 --variational-kl must be in (0, 10]
EOF

# the variational phase trains, in one process and one shard: without
# --data, or with --shards, it is refused before any work
expect 1 "$DCZ" prune "$T/m.dcz" --variational 3 -o "$T/x.dcz"
grep -q -- '--variational trains: give --data' "$T/err" || fail "--variational without data: $(cat "$T/err")"
expect 1 "$DCZ" compress "$T/m.dcz" --data fashion-mnist --variational 3 --shards 2 -o "$T/x.dcz"
grep -q -- '--variational runs in one process and one shard' "$T/err" || fail "--variational --shards: $(cat "$T/err")"
! grep -q 'prune round\|accuracy' "$T/err" && [ ! -e "$T/x.dcz" ] || fail "--variational --shards: ran"
# the budget's phase prunes nothing itself: no threshold
expect 1 "$DCZ" compress "$T/m.dcz" --data fashion-mnist --budget 1 --variational 2 --variational-threshold 2 -o "$T/x.dcz"
grep -q -- '--variational-threshold does not go with it' "$T/err" || fail "--budget --variational-threshold: $(cat "$T/err")"
! grep -q 'prune round\|accuracy\|variational dropout' "$T/err" && [ ! -e "$T/x.dcz" ] || fail "--budget --variational-threshold: ran"

# training settings out of range are usage errors; a rate that diverges
# stops the run, exit 1, and nothing is written
expect 1 "$DCZ" train --arch mlp:784-8-10 --epochs 1 --momentum 5 --data fashion-mnist -o "$T/x.dcz"
grep -q -- '--momentum must be in \[0, 1)' "$T/err" || fail "momentum 5: $(cat "$T/err")"
expect 1 "$DCZ" train --arch mlp:784-8-10 --epochs 1 --weight-decay -1 --data fashion-mnist -o "$T/x.dcz"
expect 1 "$DCZ" train --arch mlp:784-8-10 --epochs 1 --warmup-epochs -1 --data fashion-mnist -o "$T/x.dcz"
expect 1 "$DCZ" train --arch mlp:784-8-10 --epochs 2 --lr 50 --data fashion-mnist -q -o "$T/x.dcz"
grep -q 'training diverged' "$T/err" || fail "lr 50: $(cat "$T/err")"
[ ! -e "$T/x.dcz" ] || fail "a diverged training wrote its output"
"$DCZ" prune "$T/m.dcz" --sparsity 0.5 -q -o "$T/p.dcz" || fail "prune"
expect 1 "$DCZ" quantize "$T/p.dcz" --bits 2 --data fashion-mnist --quant-epochs 1 --quant-lr 1e37 -q -o "$T/q.dcz"
grep -q 'training diverged' "$T/err" || fail "quant-lr 1e37: $(cat "$T/err")"
[ ! -e "$T/q.dcz" ] || fail "a diverged fine-tuning wrote its output"

# a failure never goes unsaid: a batch that cannot be held says so
expect 5 "$DCZ" bench "$T/m.dcz" --batch 1000000000 --runs 1
grep -q 'out of memory' "$T/err" || fail "bench out of memory said: $(cat "$T/err")"
echo "fail fast ok"
