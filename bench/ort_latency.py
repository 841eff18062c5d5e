"""ort_latency.py: latency of an ONNX model in ONNX Runtime, on the same
machine and thread count as dcz bench (bench/latency.sh calls both).

    python3 bench/ort_latency.py MODEL.onnx THREADS RUNS BATCH...
Prints one line per batch: "ort BATCH median_us X p99_us Y" (nearest-rank
quantiles, as dcz bench), after ORT_WARMUP untimed runs (default 50). Exit
3 when onnxruntime is not installed (it is
a benchmark peer from PyPI, never a dependency of dcz). Inputs are random:
dense latency does not depend on their values.
"""
import os
import sys
import time

try:
    import numpy as np
    import onnxruntime as ort
except ImportError:
    sys.exit(3)


def timed(sess, name, x, runs, warmup=int(os.environ.get("ORT_WARMUP", "50"))):
    for _ in range(warmup):
        sess.run(None, {name: x})
    us = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, {name: x})
        us.append((time.perf_counter() - t) * 1e6)
    us.sort()
    k = max(1, min(len(us), int(-(-0.99 * len(us) // 1))))
    return us[(len(us) - 1) // 2], us[k - 1]


def main():
    path, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    rng = np.random.default_rng(1)
    for batch in (int(b) for b in sys.argv[4:]):
        shape = [batch] + [d if isinstance(d, int) else 1 for d in inp.shape[1:]]
        x = rng.random(shape, dtype=np.float32)
        med, p99 = timed(sess, inp.name, x, runs)
        print(f"ort {batch} median_us {med:.2f} p99_us {p99:.2f}")


if __name__ == "__main__":
    main()
