#!/usr/bin/env bash
# Data-parallel retraining under MPI: mpirun -np 2 writes the same bytes
# as -np 1 (same --shards) for train and compress of a small perceptron
# and a small CNN with batch norm, and for compress with a teacher
# (--distill); without --shards a job shards a step
# per rank and records it; only rank 0 reports; a usage error is said
# once; a rank killed with SIGKILL stops the job within seconds with a
# nonzero exit code, the previous output untouched and no temporary file.
# SKIP, with the reason, when dcz was built without MPI or mpirun is
# missing.
source "$(dirname "$0")/lib.bash"
D=fashion-mnist
if ! "$DCZ" --version | grep -q '^MPI: Open MPI'; then
    "$DCZ" --version | grep -q '^MPI: not built' || fail "--version does not say whether MPI is built"
    echo "SKIP mpirun tests: $("$DCZ" --version | sed -n 's/^MPI: //p')"
    exit 0
fi
command -v mpirun > /dev/null 2>&1 || { echo "SKIP mpirun tests: no mpirun (Debian: openmpi-bin)"; exit 0; }
# Open MPI refuses root unless told; the tests may run as root in a container
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# two ranks on a machine of fewer cores, on the loopback and shared memory only
MPIRUN=(mpirun --oversubscribe --mca btl self,vader)

# NAME NP ARGS...: runs dcz with NP ranks in $T/NAME/ (the same output name
# everywhere: the command line is recorded in the file)
ranks() {
    local name=$1 np=$2; shift 2
    mkdir -p "$T/$name"
    (cd "$T/$name" && "${MPIRUN[@]}" -np "$np" "$DCZ" "$@" > out 2> err) || { cat "$T/$name/err" >&2; fail "$name: -np $np dcz $*"; }
}
# the training split cut to 4,000 samples: --validation holds the rest out
SMALL="--data $D --validation 56000 --threads 1 -q"
C="--rounds 2 --prune-epochs 1 --final-epochs 1 --quant-epochs 1"
for arch in mlp:784-64-10 cnn:c4k3-p2-f10; do
    a=${arch%%:*}
    for np in 1 2; do
        ranks $a-train$np $np train --arch $arch --epochs 2 --shards 2 $SMALL -o m.dcz
        mkdir -p "$T/$a-comp$np" && cp "$T/$a-train$np/m.dcz" "$T/$a-comp$np/in.dcz"
        ranks $a-comp$np $np compress in.dcz --shards 2 $C $SMALL -o c.dcz
    done
    cmp "$T/$a-train1/m.dcz" "$T/$a-train2/m.dcz" || fail "$arch: train on 2 ranks differs from 1 rank"
    cmp "$T/$a-comp1/c.dcz" "$T/$a-comp2/c.dcz" || fail "$arch: compress on 2 ranks differs from 1 rank"
    "$DCZ" eval "$T/$a-comp2/c.dcz" --data $D -q > /dev/null || fail "$arch: eval"
done

# with a teacher (--distill): each rank runs it on its parts' samples, the
# same bytes on 2 ranks as on 1, another model than without it
for np in 1 2; do
    mkdir -p "$T/dist$np" && cp "$T/mlp-train1/m.dcz" "$T/dist$np/in.dcz"
    ranks dist$np $np compress in.dcz --shards 2 $C $SMALL --distill 0.5 -o c.dcz
done
cmp "$T/dist1/c.dcz" "$T/dist2/c.dcz" || fail "compress --distill on 2 ranks differs from 1 rank"
[ "$("$DCZ" info "$T/dist1/c.dcz" --json | json_field model_hash /dev/stdin)" != \
  "$("$DCZ" info "$T/mlp-comp1/c.dcz" --json | json_field model_hash /dev/stdin)" ] || fail "--distill changed nothing"

# without --shards: a part per rank, recorded; the report from rank 0 alone
ranks auto 2 train --arch mlp:784-16-10 --epochs 1 $SMALL --json -o m.dcz
[ "$(grep -c '"output"' "$T/auto/out")" -eq 1 ] || fail "not one JSON report: $(cat "$T/auto/out")"
grep -q '"mpi":{"ranks":2,"shards":2,"sums":[1-9]' "$T/auto/out" || fail "JSON: $(cat "$T/auto/out")"
"$DCZ" info "$T/auto/m.dcz" --json | grep -q '"shards":"2"' || fail "shards not recorded"
ranks auto1 1 train --arch mlp:784-16-10 --epochs 1 $SMALL --json -o m.dcz
grep -q '"mpi"' "$T/auto1/out" && fail "one rank reported a job"
ranks auto1s 1 train --arch mlp:784-16-10 --epochs 1 $SMALL --shards 2 -o m.dcz
cmp "$T/auto/m.dcz" "$T/auto1s/m.dcz" > /dev/null && fail "the recorded commands differ, the files should too"
[ "$("$DCZ" info "$T/auto/m.dcz" --json | json_field model_hash /dev/stdin)" = \
  "$("$DCZ" info "$T/auto1s/m.dcz" --json | json_field model_hash /dev/stdin)" ] ||
    fail "2 ranks without --shards and 1 rank with --shards 2 trained different models"

# a usage error, said once
(cd "$T" && "${MPIRUN[@]}" -np 2 "$DCZ" train --arch mlp:784-16-10 --shards 3 --data $D -o x.dcz > /dev/null 2> uerr) &&
    fail "--shards 3 on 2 ranks accepted"
[ "$(grep -c 'each of the 2 ranks' "$T/uerr")" -eq 1 ] || fail "usage error: $(cat "$T/uerr")"

# a rank killed mid-run
mkdir -p "$T/kill" && echo previous > "$T/kill/m.dcz"
(cd "$T/kill" && exec "${MPIRUN[@]}" -np 2 "$DCZ" train --arch mlp:784-300-100-10 --epochs 50 --data $D --threads 1 \
    -q -o m.dcz > out 2> err) &
job=$!
# rank 1 of the two, by its environment (the newest process is not always
# rank 1: killing rank 0 would leave nobody to say the job was stopped)
rank1() {
    local p
    for p in $(pgrep -f "^$DCZ train --arch mlp:784-300-100-10"); do
        tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && { echo "$p"; return 0; }
    done
    return 1
}
victim=""
for _ in $(seq 100); do   # both ranks up and training
    [ "$(pgrep -c -f "^$DCZ train --arch mlp:784-300-100-10")" -eq 2 ] && victim=$(rank1) && break
    victim=""; sleep 0.1
done
[ -n "$victim" ] || { kill $job; fail "the ranks did not start"; }
sleep 1
kill -9 "$victim"
t0=$SECONDS
wait $job; rc=$?
[ $rc -ne 0 ] || fail "a killed rank: exit code 0"
[ $((SECONDS - t0)) -le 10 ] || fail "the job took $((SECONDS - t0)) s to stop"
[ "$(cat "$T/kill/m.dcz")" = previous ] || fail "the previous output changed"
[ "$(ls -A "$T/kill" | sort | tr '\n' ' ')" = "err m.dcz out " ] || fail "left behind: $(ls -A "$T/kill")"
grep -q 'the MPI job was stopped' "$T/kill/err" || fail "no message from rank 0: $(cat "$T/kill/err")"
pgrep -f "^$DCZ train --arch mlp:784-300-100-10" > /dev/null && fail "a rank still runs"
exit 0
