#!/usr/bin/env python3
"""torch_lenet5.py: PyTorch's time for one LeNet-5 training epoch, the peer
that bench/train_epoch.sh sets dcz's time beside.

The same network, data and settings as `dcz train --arch lenet5`: the Caffe
LeNet-5 (conv 20@5x5, max-pool 2, conv 50@5x5, max-pool 2, fc 500, ReLU,
fc 10), Fashion-MNIST from Debian's dataset-fashion-mnist as floats in
[0, 1], SGD with momentum 0.9 and weight decay 5e-4, batch 64, shuffled.

    python3 bench/torch_lenet5.py THREADS [EPOCH_FRACTION]

Prints one line: "torch_epoch_seconds S samples N threads T". Exits 3 when
torch cannot be imported, so the caller can skip with a note.
"""
import gzip
import struct
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError:
    sys.exit(3)

DATA = "/usr/share/datasets/fashion-mnist"


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    fraction = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    x = idx(DATA + "/train-images-idx3-ubyte.gz").float().div_(255).unsqueeze(1)
    y = idx(DATA + "/train-labels-idx1-ubyte.gz").long()
    n = int(x.shape[0] * fraction)
    net = nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.MaxPool2d(2),
        nn.Conv2d(20, 50, 5), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    # warm-up: a few batches so one-time allocation is not counted
    for i in range(5):
        opt.zero_grad()
        loss_fn(net(x[i * 64:(i + 1) * 64]), y[i * 64:(i + 1) * 64]).backward()
        opt.step()
    perm = torch.randperm(x.shape[0])[:n]
    t0 = time.perf_counter()
    for s in range(0, n, 64):
        b = perm[s:s + 64]
        opt.zero_grad()
        loss_fn(net(x[b]), y[b]).backward()
        opt.step()
    secs = time.perf_counter() - t0
    print("torch_epoch_seconds %.3f samples %d threads %d" % (secs, n, threads))


if __name__ == "__main__":
    main()
