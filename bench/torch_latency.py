"""torch_latency.py: batch-1 latency of LeNet-300-100 or LeNet-5 in PyTorch,
fp32 and with dynamic int8 quantization of its Linear layers, on the same
machine and thread count as dcz bench (bench/latency.sh calls both).

    python3 bench/torch_latency.py MODEL THREADS RUNS
Prints one line per variant: "torch VARIANT median_us X p99_us Y".
Exit 3 when torch is not installed. Weights are random: dense latency does
not depend on their values.
"""
import sys
import time

try:
    import torch
except ImportError:
    sys.exit(3)


def lenet300():
    return torch.nn.Sequential(
        torch.nn.Linear(784, 300), torch.nn.ReLU(),
        torch.nn.Linear(300, 100), torch.nn.ReLU(),
        torch.nn.Linear(100, 10), torch.nn.Softmax(dim=1)), (1, 784)


def lenet5():
    # the Caffe variant dcz trains: no ReLU after the convolutions
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 20, 5), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(20, 50, 5), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(800, 500), torch.nn.ReLU(),
        torch.nn.Linear(500, 10), torch.nn.Softmax(dim=1)), (1, 1, 28, 28)


def timed(model, x, runs, warmup=50):
    with torch.inference_mode():
        for _ in range(warmup):
            model(x)
        us = []
        for _ in range(runs):
            t = time.perf_counter()
            model(x)
            us.append((time.perf_counter() - t) * 1e6)
    us.sort()
    k = max(1, min(len(us), int(-(-0.99 * len(us) // 1))))
    return us[(len(us) - 1) // 2], us[k - 1]


def main():
    name, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.manual_seed(1)
    torch.set_num_threads(threads)
    model, shape = {"lenet300": lenet300, "lenet5": lenet5}[name]()
    model.eval()
    x = torch.rand(*shape)
    q = torch.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    for variant, m in (("fp32", model), ("int8-dynamic", q)):
        med, p99 = timed(m, x, runs)
        print(f"torch {variant} median_us {med:.2f} p99_us {p99:.2f}")


if __name__ == "__main__":
    main()
