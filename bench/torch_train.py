#!/usr/bin/env python3
"""torch_train.py: PyTorch's time for training one of dcz's networks on
Fashion-MNIST, the peer that bench/train_epoch.sh sets dcz's time beside.

The same networks, data and settings as `dcz train --arch ARCH`:
  lenet5  the Caffe LeNet-5 (conv 20@5x5, max-pool 2, conv 50@5x5,
          max-pool 2, fc 500, ReLU, fc 10);
  cnn     the conv-heavy CNN cnn:c32k3-c32k3-p2-c64k3-c64k3-p2-c128k3-gap-f10
          (each conv 3x3, padding 1, then batch norm and ReLU; global
          average pooling; fc 10);
  resnet  the ResNet-style preset cnn:c16k3-r16-r32s2-r64s2-gap-f10 (a
          residual block: conv 3x3 (stride s), batch norm, ReLU, conv 3x3,
          batch norm, plus the input, or its 1x1 convolution of stride s and
          batch norm when the shape changes; then ReLU);
  mobilenetv2  the MobileNetV2-style preset
          cnn:c16k3-m16e1-m24s2-m24-m32s2-m32-m64s2-m64-m96-c256k1-gap-f10
          (a stem conv 3x3, batch norm and ReLU; inverted residual blocks:
          a 1x1 expansion by 6 (none for e1), a depthwise 3x3 (stride s),
          a 1x1 projection, each with batch norm, ReLU6 after the first
          two, plus the input where the shape stays; a 1x1 conv to 256,
          batch norm, ReLU; global average pooling; fc 10);
  resnet18  torchvision's ResNet-18 with one output per class, on the
          RGB images of an image folder (DATA=ROOT: ROOT/train/CLASS/*, as
          bench/image_folder.py makes them, every image the same size);
Fashion-MNIST from Debian's dataset-fashion-mnist as floats in [0, 1], SGD
with momentum 0.9 and weight decay 5e-4, batch 64, shuffled.

    python3 bench/torch_train.py ARCH THREADS [EPOCH_FRACTION [DEVICE]]
    python3 bench/torch_train.py --export FILE.onnx resnet18 CLASSES SIZE

--export writes the network, as torch.manual_seed(1) makes it, to ONNX by
PyTorch's default exporter, for dcz import: dcz then trains the same
network, but for its batch norms, which the export in inference mode
folds into the convolutions (dcz trains less than PyTorch does).

DEVICE cpu (the default) or cuda: on the GPU the network and the data sit
there, fp32 with TF32 off, and the time ends when the GPU is done. Prints
one line: "torch_epoch_seconds S samples N threads T" (S: the time of the
fraction's samples). Exits 3 when torch cannot be imported, so the
caller can skip with a note.
"""
import gzip
import os
import struct
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError:
    sys.exit(3)

DATA = os.environ.get("DATA", "/usr/share/datasets/fashion-mnist")


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def conv_bn_relu(cin, cout):
    return [nn.Conv2d(cin, cout, 3, 1, 1), nn.BatchNorm2d(cout), nn.ReLU()]


class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout))
        self.proj = None
        if cin != cout or stride != 1:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0), nn.BatchNorm2d(cout))
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x) + (x if self.proj is None else self.proj(x)))


class Inverted(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        mid = cin * expand
        layers = [nn.Conv2d(cin, mid, 1), nn.BatchNorm2d(mid), nn.ReLU6()] if expand != 1 else []
        layers += [nn.Conv2d(mid, mid, 3, stride, 1, groups=mid), nn.BatchNorm2d(mid), nn.ReLU6(),
                   nn.Conv2d(mid, cout, 1), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def images(root):
    """The images of ROOT/train/CLASS/* as floats in [0, 1] (N x 3 x H x W)
    and their class indices, the classes in name order (as dcz reads them)."""
    import torchvision.io as tio
    xs, ys = [], []
    classes = sorted(os.listdir(os.path.join(root, "train")))
    for c, name in enumerate(classes):
        folder = os.path.join(root, "train", name)
        for f in sorted(os.listdir(folder)):
            xs.append(tio.decode_image(tio.read_file(os.path.join(folder, f)), tio.ImageReadMode.RGB))
            ys.append(c)
    return torch.stack(xs).float().div_(255), torch.tensor(ys), len(classes)


def network(arch, classes=10):
    if arch == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=classes)
    if arch == "lenet5":
        return nn.Sequential(
            nn.Conv2d(1, 20, 5), nn.MaxPool2d(2),
            nn.Conv2d(20, 50, 5), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
    if arch == "cnn":
        return nn.Sequential(
            *conv_bn_relu(1, 32), *conv_bn_relu(32, 32), nn.MaxPool2d(2),
            *conv_bn_relu(32, 64), *conv_bn_relu(64, 64), nn.MaxPool2d(2),
            *conv_bn_relu(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    if arch == "resnet":
        return nn.Sequential(
            *conv_bn_relu(1, 16), Residual(16, 16, 1), Residual(16, 32, 2), Residual(32, 64, 2),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    if arch == "mobilenetv2":
        blocks = [(16, 16, 1, 1), (16, 24, 2, 6), (24, 24, 1, 6), (24, 32, 2, 6), (32, 32, 1, 6),
                  (32, 64, 2, 6), (64, 64, 1, 6), (64, 96, 1, 6)]
        return nn.Sequential(
            *conv_bn_relu(1, 16), *[Inverted(*b) for b in blocks],
            nn.Conv2d(96, 256, 1), nn.BatchNorm2d(256), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10))
    raise SystemExit("torch_train: unknown architecture %r (lenet5, cnn, resnet, mobilenetv2 or resnet18)" % arch)


def export(path, arch, classes, size):
    torch.manual_seed(1)
    net = network(arch, classes).eval()
    torch.onnx.export(net, (torch.rand(1, 3, size, size),), path)


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--export":
        export(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    if len(sys.argv) < 3:
        raise SystemExit("usage: torch_train.py ARCH THREADS [EPOCH_FRACTION]")
    arch = sys.argv[1]
    threads = int(sys.argv[2])
    fraction = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    device = sys.argv[4] if len(sys.argv) > 4 else "cpu"
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    classes = 10
    if arch == "resnet18":
        x, y, classes = images(DATA)
        x, y = x.to(device), y.to(device)
    else:
        x = idx(DATA + "/train-images-idx3-ubyte.gz").float().div_(255).unsqueeze(1).to(device)
        y = idx(DATA + "/train-labels-idx1-ubyte.gz").long().to(device)
    n = int(x.shape[0] * fraction)
    net = network(arch, classes).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    # warm-up: a few batches so one-time allocation is not counted
    for i in range(5):
        opt.zero_grad()
        loss_fn(net(x[i * 64:(i + 1) * 64]), y[i * 64:(i + 1) * 64]).backward()
        opt.step()
    perm = torch.randperm(x.shape[0])[:n].to(device)
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for s in range(0, n, 64):
        b = perm[s:s + 64]
        opt.zero_grad()
        loss_fn(net(x[b]), y[b]).backward()
        opt.step()
    if device == "cuda":
        torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    print("torch_epoch_seconds %.3f samples %d threads %d" % (secs, n, threads))


if __name__ == "__main__":
    main()
