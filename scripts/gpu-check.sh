#!/usr/bin/env bash
# gpu-check.sh: everything the CUDA backend is checked and timed by, in one
# call, on a machine with an NVIDIA GPU and the CUDA toolkit (nvcc,
# cuBLAS, cuSPARSE for the benchmark, compute-sanitizer):
#   1. the CUDA build (make CUDA=1) with no warning, and dcz --version;
#   2. tests/unit/test_gpu (every GPU kernel and every corpus model against
#      the CPU references; under the sanitizers of step 6 too), and the
#      trainer on the GPU: tests/unit/test_gpu_train (the device path
#      against the host's, two GPU runs bit for bit) and dcz train --device
#      gpu against --device cpu (LeNet-300-100, LeNet-5 and the ResNet-style
#      preset, 2 epochs, each then compressed in one short round on the
#      device it was trained on: accuracies side by side, two GPU runs the
#      same bytes, sharded steps under mpirun -np 1 the bytes of one
#      process), LeNet-5 also with --distill 0.5 (the teacher on the GPU);
#   3. models trained and compressed here (LeNet-300-100, LeNet-5, the
#      ResNet-style and MobileNetV2-style presets; a few epochs each: the
#      point is the same accuracy on both devices, not a good model), each
#      also int8-calibrated: dcz eval on --device cpu and gpu, the accuracies
#      side by side (the int8 ones on integers, which must agree exactly,
#      and with --fp32), and a fixed16 calibration refused on the GPU with
#      its reason;
#   4. bench_gpu (the EIE and LeNet layers: dcz against cuBLAS and cuSPARSE,
#      bandwidth against the device's copy bandwidths, HBM and L2; whole-model
#      batch-1 latency, GPU against CPU, of the compressed models of step
#      3), and dcz bench of every model of step 3 at batch 1 and 64 (each
#      the median of ROUNDS rounds, default 3, the models of an arch taken
#      in turn in each);
#   5. the whole-model table against PyTorch on the same GPU: torchvision's
#      ResNet-18 and MobileNetV2 exported by the PyTorch there
#      (bench/torch_gpu.py --export), imported, and pruned to 90% with 4-bit
#      codebooks in one shot (the kernels a compressed model runs, not its
#      accuracy), dense and compressed, dcz bench --device gpu at batch 1
#      and 64, beside bench/torch_gpu.py's CUDA-graph times of the same
#      networks and of the LeNets (skipped where python3 has no torch);
#   6. tests/unit/test_gpu under compute-sanitizer memcheck and racecheck
#      (the slowest step: started in the background before step 2, beside
#      the steps that check results, each within SANITIZER_TIMEOUT seconds,
#      default 600; the timing steps wait for them);
#   7. training speed: one epoch of LeNet-5 and of the ResNet-style preset
#      (dcz train --device gpu, then cpu) and of torchvision's ResNet-18 at
#      224x224 on a generated folder of JPEG images (bench/image_folder.py;
#      the network exported by PyTorch, imported; dcz on the GPU, and on
#      the CPU for 64 samples), beside PyTorch's epoch on this GPU
#      (bench/torch_train.py; skipped without torch).
# Everything goes to stdout and into OUT (default build/gpu-check/), the
# text reports also into OUT/reports.tar.gz (no models: small enough to
# carry off a lent machine). Exit status: 0 when every check passed.
#   bash scripts/gpu-check.sh [OUT]
# Environment: STEPS="build tests models bench torch sanitizers speed" (the
# default: all seven) runs those steps alone; DEADLINE=S starts no model,
# network or step once S seconds have passed (SKIP lines say what was
# left out); TRAIN_CPU=0 leaves step 2's CPU runs out (made on another
# machine: the accuracies to compare are then in its files); BENCH_GPU=0 leaves bench_gpu out
# of step 4, PER_LAYER=0 the layer-by-layer times of steps 4 and 5; TORCH=0
# skips step 5; DATA=dir trains and evaluates on the IDX files in dir
# (default: Debian's fashion-mnist); ARCHS="lenet5 resnet" makes and checks
# those models of step 3 alone (default: all four); MODELS=dir takes the
# models of step 3 from dir (ARCH.dcz, ARCH-small.dcz, ARCH-int8.dcz and
# ARCH-fixed16.dcz, made there with the commands below on another machine)
# instead of making them; BUILD=0 skips step 1's make and checks the binaries
# already in bin/ and build/ (built on another machine with make CUDA=1, for
# a GPU machine that lacks the build's libraries: scripts/gpu-pack.sh packs
# them with the binaries).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-build/gpu-check}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
D=${DATA:-fashion-mnist}
[ -d "$D" ] && D=$(cd "$D" && pwd)
fails=0
step() { echo; echo "== $*"; }
want() { case " ${STEPS:-build tests models bench torch sanitizers speed} " in *" $1 "*) return 0 ;; esac; return 1; }
# late WHAT: true (and says so) once DEADLINE seconds have passed
late() {
    [ -n "${DEADLINE:-}" ] && [ "$SECONDS" -ge "$DEADLINE" ] || return 1
    echo "SKIP $* (past the deadline, ${DEADLINE} s)"
}
ARCH_LIST=${ARCHS:-lenet300 lenet5 resnet mobilenetv2}
check() { # name, command...: runs it, counts a failure
    local name=$1; shift
    if "$@"; then echo "ok   $name"; else echo "FAIL $name (exit $?)"; fails=$((fails + 1)); fi
}

step "build"
if ! want build; then
    echo "not in STEPS"
elif [ "${BUILD:-1}" != 0 ]; then
    make -j"$(nproc)" CUDA=1 DEPS=0 bin/dcz tests-build build/bench/bench_gpu > "$OUT/build.txt" 2>&1 ||
        { tail -30 "$OUT/build.txt"; echo "FAIL build"; exit 1; }
    if grep -E 'warning' "$OUT/build.txt"; then echo "FAIL the build has warnings"; fails=$((fails + 1)); fi
else
    echo "BUILD=0: the binaries already built"
fi
./bin/dcz --version | tee "$OUT/version.txt"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/gpu.txt"

# the sanitizers, in the background from here on (san_wait reports them)
san_pids=
if want sanitizers && command -v compute-sanitizer > /dev/null 2>&1; then
    for tool in memcheck racecheck; do
        timeout "${SANITIZER_TIMEOUT:-600}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
            --log-file "$OUT/sanitizer-$tool.txt" build/tests/test_gpu > /dev/null &
        san_pids="$san_pids $tool:$!"
    done
fi
san_wait() {
    step "the kernel tests under compute-sanitizer"
    if ! want sanitizers; then
        echo "not in STEPS"
    elif [ -z "$san_pids" ]; then
        echo "FAIL no compute-sanitizer on PATH"; fails=$((fails + 1))
    else
        local p rc
        for p in $san_pids; do
            wait "${p#*:}"
            rc=$?
            if [ $rc = 0 ]; then echo "ok   compute-sanitizer ${p%%:*}"
            elif [ $rc = 124 ]; then echo "FAIL compute-sanitizer ${p%%:*}: not done in ${SANITIZER_TIMEOUT:-600} s"; fails=$((fails + 1))
            else echo "FAIL compute-sanitizer ${p%%:*} (exit $rc)"; fails=$((fails + 1)); fi
            tail -2 "$OUT/sanitizer-${p%%:*}.txt"
        done
        san_pids=
    fi
}

step "kernel and model tests on the GPU"
want tests && check test_gpu bash -c "timeout 300 build/tests/test_gpu | tee '$OUT/test_gpu.txt'; exit \${PIPESTATUS[0]}"
want tests && grep -q '^SKIP' "$OUT/test_gpu.txt" && { echo "FAIL test_gpu skipped: no GPU seen"; fails=$((fails + 1)); }
want tests && check test_gpu_train bash -c "timeout 300 build/tests/test_gpu_train | tee '$OUT/test_gpu_train.txt'; exit \${PIPESTATUS[0]}"
want tests && grep -q '^SKIP' "$OUT/test_gpu_train.txt" && { echo "FAIL test_gpu_train skipped"; fails=$((fails + 1)); }
# the trainer on the GPU against the CPU: the same recipe on each device
# (train, then compress what that device trained), the accuracies side by
# side, a second GPU run that must write the same bytes. Each run writes in
# a folder of its own under the same name (the command line is recorded in
# the file)
if want tests; then
    printf '%-10s %-10s %-6s %12s %10s\n' arch step device epoch_s accuracy | tee "$OUT/train.txt"
    row() { # arch step device json
        awk -v a=$1 -v s=$2 -v d=$3 '{ e = "-"; if (match($0, /"epoch_seconds": *[0-9.e+-]+/)) e = substr($0, RSTART + 16, RLENGTH - 16);
                match($0, /"accuracy": *[0-9.e+-]+/); c = substr($0, RSTART + 11, RLENGTH - 11);
                printf "%-10s %-10s %-6s %12s %10.4f\n", a, s, d, e, c }' "$4" | tee -a "$OUT/train.txt"
    }
    # dcz in OUT/FOLDER: dcz ARGS...
    dcz_in() { local dir=$OUT/$1; shift; mkdir -p "$dir" && (cd "$dir" && "$ROOT/bin/dcz" "$@"); }
    devices="gpu gpu2"; [ "${TRAIN_CPU:-1}" = 0 ] || devices="cpu $devices"
    for dev in $devices; do mkdir -p "$OUT/$dev"; done
    for arch in lenet300 lenet5 resnet; do
        late "the trainer on $arch" && break
        for dev in $devices; do
            dcz_in $dev train --arch $arch --epochs 2 --data "$D" --device ${dev%2} --json -q -o $arch.dcz > "$OUT/$dev/$arch.json" 2> "$OUT/$dev/$arch.err" ||
                { echo "FAIL dcz train --arch $arch --device ${dev%2}"; cat "$OUT/$dev/$arch.err"; fails=$((fails + 1)); }
            row $arch train $dev "$OUT/$dev/$arch.json"
        done
        for dev in $devices; do
            dcz_in $dev compress $arch.dcz --data "$D" --rounds 1 --prune-epochs 1 --final-epochs 1 --quant-epochs 1 \
                --device ${dev%2} --json -q -o $arch-c.dcz > "$OUT/$dev/$arch-c.json" 2> "$OUT/$dev/$arch-c.err" ||
                { echo "FAIL dcz compress $arch --device ${dev%2}"; cat "$OUT/$dev/$arch-c.err"; fails=$((fails + 1)); }
            row $arch compress $dev "$OUT/$dev/$arch-c.json"
        done
        grep -q '"device": *"gpu"' "$OUT/gpu/$arch.json" ||
            { echo "FAIL dcz train --arch $arch --device gpu did not train on the GPU"; fails=$((fails + 1)); }
        for f in $arch $arch-c; do
            cmp -s "$OUT/gpu/$f.dcz" "$OUT/gpu2/$f.dcz" ||
                { echo "FAIL $f: two GPU runs wrote different files"; fails=$((fails + 1)); }
        done
        # sharded steps on the GPU: alone and as the one rank of an MPI job,
        # the same bytes
        if [ $arch = lenet300 ]; then
            for how in alone mpi; do
                run=; [ $how = mpi ] && run="mpirun --allow-run-as-root -np 1"
                [ $how = mpi ] && ! command -v mpirun > /dev/null && { echo "SKIP mpirun: not installed"; continue; }
                mkdir -p "$OUT/shards-$how"
                (cd "$OUT/shards-$how" && $run "$ROOT/bin/dcz" compress "$OUT/gpu/$arch.dcz" --data "$D" --rounds 1 --prune-epochs 1 \
                    --final-epochs 1 --quant-epochs 1 --shards 2 --device gpu -q -o c.dcz > /dev/null 2> err) ||
                    { echo "FAIL compress --shards 2 --device gpu ($how)"; cat "$OUT/shards-$how/err"; fails=$((fails + 1)); }
            done
            if [ -e "$OUT/shards-mpi/c.dcz" ]; then
                cmp -s "$OUT/shards-alone/c.dcz" "$OUT/shards-mpi/c.dcz" &&
                    echo "ok   --shards 2 on the GPU: mpirun -np 1 wrote the bytes of one process" ||
                    { echo "FAIL --shards 2 on the GPU: the MPI run wrote another file"; fails=$((fails + 1)); }
            fi
        fi
        # distillation: the teacher's forward passes on the GPU too (a note
        # would say the retraining fell back to the CPU)
        if [ $arch = lenet5 ]; then
            for dev in ${devices% gpu2}; do
                dcz_in $dev compress $arch.dcz --data "$D" --rounds 1 --prune-epochs 1 --final-epochs 1 \
                    --quant-epochs 1 --distill 0.5 --device $dev --json -o $arch-d.dcz > "$OUT/$dev/$arch-d.json" 2> "$OUT/$dev/$arch-d.err" ||
                    { echo "FAIL dcz compress $arch --distill 0.5 --device $dev"; cat "$OUT/$dev/$arch-d.err"; fails=$((fails + 1)); }
                row $arch distill $dev "$OUT/$dev/$arch-d.json"
            done
            ! grep -q 'retraining on the CPU' "$OUT/gpu/$arch-d.err" ||
                { echo "FAIL --distill with --device gpu retrained on the CPU"; fails=$((fails + 1)); }
        fi
    done
fi

step "models: accuracy on the CPU and on the GPU"
M=${MODELS:-$OUT/models}
mkdir -p "$M"
printf '%-22s %10s %10s\n' model cpu gpu | tee "$OUT/accuracy.txt"
for arch in $(want models && echo "$ARCH_LIST"); do
    late "the models of $arch" && break
    if [ -z "${MODELS:-}" ]; then
        ./bin/dcz train --arch "$arch" --epochs 2 --warmup-epochs 1 --data $D --device cpu -q -o "$M/$arch.dcz" &&
            ./bin/dcz compress "$M/$arch.dcz" --data $D --rounds 1 --prune-epochs 1 --final-epochs 1 --quant-epochs 1 \
                --device gpu -q -o "$M/$arch-small.dcz" > /dev/null &&
            ./bin/dcz calibrate "$M/$arch-small.dcz" --data $D -q -o "$M/$arch-int8.dcz" > /dev/null &&
            ./bin/dcz calibrate "$M/$arch-small.dcz" --data $D --scheme fixed16 -q -o "$M/$arch-fixed16.dcz" > /dev/null ||
            { echo "FAIL making $arch"; fails=$((fails + 1)); continue; }
    fi
    for f in "$arch" "$arch-small" "$arch-int8" "$arch-int8 --fp32"; do
        set -- $f
        c=$(./bin/dcz eval "$M/$1.dcz" --data $D --device cpu ${2:-} --json -q | sed -n 's/.*"accuracy":\([0-9.]*\).*/\1/p')
        g=$(./bin/dcz eval "$M/$1.dcz" --data $D --device gpu ${2:-} --json -q | sed -n 's/.*"accuracy":\([0-9.]*\).*/\1/p')
        printf '%-22s %10s %10s\n' "$f" "$c" "$g" | tee -a "$OUT/accuracy.txt"
        # integers agree exactly; floats but for the odd sample whose top two
        # scores tie within rounding
        tol=0.0003; [ "$f" = "$arch-int8" ] && tol=0.00000001
        awk -v c="$c" -v g="$g" -v t=$tol 'BEGIN { d = c - g; exit !(c != "" && g != "" && d < t && d > -t) }' ||
            { echo "FAIL $f: cpu $c, gpu $g"; fails=$((fails + 1)); }
    done
    check "$arch-fixed16 refused on the GPU with its reason" \
        bash -c "! ./bin/dcz eval '$M/$arch-fixed16.dcz' --data $D --device gpu -q 2> '$OUT/fixed16.err' && grep -q '16-bit fixed point' '$OUT/fixed16.err'"
done

san_wait

step "training speed: dcz on the GPU and the CPU, PyTorch on this GPU"
# one epoch each (the seconds of the epoch alone, data loading not counted
# on either side)
have_torch=0
python3 -c 'import torch, torchvision; assert torch.cuda.is_available()' 2> /dev/null && have_torch=1
# torch_train.py reads IDX files from a folder (DATA), Debian's by default
torch_data=; [ -d "$D" ] && torch_data=$D
# samples a second of a dcz train --json report (empty where it failed)
rate() { awk '{ if (match($0, /"epoch_seconds":[0-9.e+-]+/)) s = substr($0, RSTART + 16, RLENGTH - 16);
                if (match($0, /"train_samples":[0-9]+/)) n = substr($0, RSTART + 16, RLENGTH - 16) }
              END { if (s > 0 && n > 0) print n / s }' "$1" 2> /dev/null; }
# samples a second of torch_train.py's line
torch_rate() { sed -n 's/torch_epoch_seconds \([0-9.]*\) samples \([0-9]*\).*/\2 \1/p' | awk '$2 > 0 { print $1 / $2 }'; }
speed_row() { # network gpu-rate cpu-rate torch-rate
    awk -v n=$1 -v g="$2" -v c="$3" -v t="$4" 'function f(x) { return x == "" ? "-" : sprintf("%.0f", x) }
        BEGIN { printf "%-12s %10s %10s %10s %10s %10s\n", n, f(g), f(c), f(t),
            (g == "" || t == "" ? "-" : sprintf("%.2f", g / t)), (g == "" || c == "" ? "-" : sprintf("%.1f", g / c)) }'
}
if want speed && ! late "training speed"; then
    S=$OUT/speed
    mkdir -p "$S"
    printf '%-12s %10s %10s %10s %10s %10s\n' network "gpu /s" "cpu /s" "torch /s" "gpu/torch" "gpu/cpu" | tee "$S/speed.txt"
    for arch in lenet5 resnet; do
        late "training speed of $arch" && break
        for dev in gpu cpu; do
            v=; [ $dev = cpu ] && v="--validation 54000"
            (cd "$S" && "$ROOT/bin/dcz" train --arch $arch --epochs 1 --data "$D" $v --device $dev --json -q -o $arch-$dev.dcz \
                > $arch-$dev.json 2> $arch-$dev.err) || { echo "FAIL speed: dcz train $arch --device $dev"; cat "$S/$arch-$dev.err"; fails=$((fails + 1)); }
        done
        t=
        if [ $have_torch = 1 ]; then
            t=$(DATA=${torch_data:-/usr/share/datasets/fashion-mnist} python3 bench/torch_train.py $arch "$(nproc)" 1 cuda \
                2> "$S/torch-$arch.err" | torch_rate)
            [ -n "$t" ] || { echo "FAIL speed: PyTorch's $arch epoch"; tail -3 "$S/torch-$arch.err"; fails=$((fails + 1)); }
        fi
        speed_row $arch "$(rate "$S/$arch-gpu.json")" "$(rate "$S/$arch-cpu.json")" "$t" | tee -a "$S/speed.txt"
    done
    # torchvision's ResNet-18 at 224x224: 10 classes of 100 JPEG images
    if [ $have_torch = 1 ] && ! late "training speed of ResNet-18"; then
        I=$S/images
        if python3 bench/image_folder.py "$I" 10 100 10 224 && python3 bench/torch_train.py --export "$S/rn18.onnx" resnet18 10 224 \
            > "$S/export.txt" 2>&1 && ./bin/dcz import "$S/rn18.onnx" -q -o "$S/rn18.dcz"; then
            for dev in gpu cpu; do
                v=; [ $dev = cpu ] && v="--validation 936"
                (cd "$S" && "$ROOT/bin/dcz" train rn18.dcz --epochs 1 --data "$I" $v --device $dev --json -q -o rn18-$dev.dcz \
                    > rn18-$dev.json 2> rn18-$dev.err) || { echo "FAIL speed: dcz train ResNet-18 --device $dev"; cat "$S/rn18-$dev.err"; fails=$((fails + 1)); }
            done
            t=$(DATA=$I python3 bench/torch_train.py resnet18 "$(nproc)" 1 cuda 2> "$S/torch-rn18.err" | torch_rate)
            [ -n "$t" ] || { echo "FAIL speed: PyTorch's ResNet-18 epoch"; tail -3 "$S/torch-rn18.err"; fails=$((fails + 1)); }
            speed_row resnet18-224 "$(rate "$S/rn18-gpu.json")" "$(rate "$S/rn18-cpu.json")" "$t" | tee -a "$S/speed.txt"
        else
            echo "FAIL speed: the ResNet-18 image folder, export or import"; tail -5 "$S/export.txt"; fails=$((fails + 1))
        fi
    fi
    echo "(training samples a second over one epoch; cpu: dcz on $(nproc) cores over 6,000 samples, ResNet-18 over 64; gpu/torch above 1: dcz faster)" | tee -a "$S/speed.txt"
fi

step "benchmarks"
want bench && [ "${BENCH_GPU:-1}" != 0 ] && ! late bench_gpu && check bench_gpu bash -c "timeout 300 build/bench/bench_gpu $M/*-small.dcz | tee '$OUT/bench_gpu.txt'; exit \${PIPESTATUS[0]}"
# the median of dcz bench FILE on the GPU at batch B (100 runs), microseconds
gpu_us() {
    timeout 120 ./bin/dcz bench "$1" --device gpu --batch "$2" --runs 100 --loads 1 --json -q |
        sed -n 's/.*"median_us":\([0-9.]*\).*/\1/p' | awk '{ printf "%.1f", $1 }'
}
# gpu_us of each FILE at batch 1 and 64, the files taken in turn ROUNDS times
# (default 3), so that a slow spell of the device falls on all of them
# alike: lines "FILE BATCH US", US the median of the rounds. What a dense
# model and its compressed form are compared by.
ROUNDS=${ROUNDS:-3}
gpu_rounds() {
    for r in $(seq "$ROUNDS"); do
        for f in "$@"; do for b in 1 64; do echo "$f $b $(gpu_us "$f" $b)"; done; done
    done | sort -k1,1 -k2,2n -k3,3g | awk '
        function put() { if (n) print key, v[int((n + 1) / 2)] }
        $1 " " $2 != key { put(); key = $1 " " $2; n = 0 }
        { v[++n] = $3 }
        END { put() }'
}
# the median of file F at batch B in gpu_rounds' lines (the variable R)
us_of() { echo "$R" | awk -v f="$1" -v b="$2" '$1 == f && $2 == b { print $3 }'; }
printf '%-34s %12s %12s\n' "model (dcz bench --device gpu)" "batch 1 us" "batch 64 us" | tee "$OUT/bench_models.txt"
for arch in $(want bench && echo "$ARCH_LIST"); do
    late "dcz bench of $arch" >&2 && break
    files=()
    for f in "$arch" "$arch-small" "$arch-int8"; do [ -f "$M/$f.dcz" ] && files+=("$M/$f.dcz"); done
    [ ${#files[@]} -gt 0 ] || continue
    R=$(gpu_rounds "${files[@]}")
    for f in "${files[@]}"; do
        printf '%-34s %12s %12s\n' "$(basename "$f" .dcz)" "$(us_of "$f" 1)" "$(us_of "$f" 64)"
    done
done | tee -a "$OUT/bench_models.txt"
# where the time goes: each layer's device time, dense and compressed
for arch in $(want bench && [ "${PER_LAYER:-1}" != 0 ] && echo "$ARCH_LIST"); do
    late "the layer times of $arch" && break
    for f in "$arch" "$arch-small"; do
        for b in 1 64; do
            [ -f "$M/$f.dcz" ] && timeout 120 ./bin/dcz bench "$M/$f.dcz" --device gpu --batch $b --runs 20 --per-layer -q \
                > "$OUT/layers-$f-b$b.txt" 2>&1
        done
    done
done

step "whole models against PyTorch on this GPU"
if [ "${TORCH:-1}" = 0 ] || ! want torch; then
    echo "skipped (TORCH=0 or not in STEPS)"
elif late "the whole models against PyTorch"; then
    :
elif ! python3 -c 'import torch, torchvision; assert torch.cuda.is_available()' 2> /dev/null; then
    echo "SKIP no python3 torch and torchvision with a CUDA device"
else
    TV=$OUT/torchvision
    mkdir -p "$TV"
    check torch_gpu bash -c "python3 bench/torch_gpu.py --export '$TV' lenet300 lenet5 resnet18 mobilenet_v2 > '$TV/torch.txt' 2> '$TV/torch.err'"
    cat "$TV/torch.txt"
    for n in resnet18 mobilenet_v2; do
        check "$n: import and compress" bash -c "./bin/dcz import '$TV/$n.onnx' -q -o '$TV/$n.dcz' &&
            ./bin/dcz prune '$TV/$n.dcz' --sparsity 0.9 -q -o '$TV/$n-p.dcz' &&
            ./bin/dcz quantize '$TV/$n-p.dcz' --bits 4 -q -o '$TV/$n-q.dcz' &&
            ./bin/dcz encode '$TV/$n-q.dcz' -q -o '$TV/$n-small.dcz'"
    done
    {
        printf '%-26s %8s %8s %8s %8s %8s %8s\n' network "dense" "small" torch "dense" "small" torch
        printf '%-26s %8s %8s %8s %8s %8s %8s\n' "(us, host to host)" b1 b1 b1 b64 b64 b64
        for n in lenet300 lenet5 resnet18 mobilenet_v2; do
            case $n in
            lenet300 | lenet5) d=$M/$n.dcz c=$M/$n-small.dcz ;;
            *) d=$TV/$n.dcz c=$TV/$n-small.dcz ;;
            esac
            t1=$(awk -v n=$n '$2 == n && $4 == 1 { print $6 }' "$TV/torch.txt")
            t64=$(awk -v n=$n '$2 == n && $4 == 64 { print $6 }' "$TV/torch.txt")
            R=$(gpu_rounds "$d" "$c")
            printf '%-26s %8s %8s %8s %8s %8s %8s\n' $n "$(us_of "$d" 1)" "$(us_of "$c" 1)" "$t1" \
                "$(us_of "$d" 64)" "$(us_of "$c" 64)" "$t64"
        done
    } | tee "$OUT/bench_torch.txt"
    # where the time goes: each layer's device time (dcz bench --per-layer)
    for n in $([ "${PER_LAYER:-1}" != 0 ] && echo resnet18 mobilenet_v2); do
        for f in $n $n-small; do
            for b in 1 64; do
                timeout 120 ./bin/dcz bench "$TV/$f.dcz" --device gpu --batch $b --runs 20 --per-layer -q \
                    > "$TV/layers-$f-b$b.txt" 2>&1
            done
        done
    done
fi

step "done"
# the reports alone (text, no models or images), small enough to carry off
# a lent machine: OUT/reports.tar.gz
(cd "$OUT" && find . -name reports.tar.gz -prune -o -type f \( -name '*.txt' -o -name '*.json' -o -name '*.err' -o -name '*.csv' \) -print |
    tar -czf reports.tar.gz -T -)
echo "$fails failed; files in $OUT (the reports alone: $OUT/reports.tar.gz)"
exit $((fails > 0))
