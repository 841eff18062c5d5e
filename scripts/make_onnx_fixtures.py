#!/usr/bin/python3
"""make_onnx_fixtures.py: writes the ONNX and PNG test fixtures of dcz.

Run from the repository root with Debian's Python (python3-torch and
python3-onnx; Fashion-MNIST from dataset-fashion-mnist):

    /usr/bin/python3 scripts/make_onnx_fixtures.py             # everything
    /usr/bin/python3 scripts/make_onnx_fixtures.py --only dag  # only the
        non-chain models resnet and mbv2, their outputs, accuracies and
        seeds; every other file is left as it is

The outputs are committed, so the tests need no Python:

  tests/fixtures/onnx/
    mlp.onnx            784-32-10 perceptron (Flatten, Gemm, Relu), opset 11
    cnn.onnx            Conv+BatchNormalization+Relu+MaxPool, Conv+BN+Relu+
                        AveragePool, Flatten, Gemm; opset 17; conv2 and fc
                        pruned by magnitude in PyTorch (exact zeros)
    cnn_matmul.onnx     strided Conv+BN+Relu, MaxPool, GlobalAveragePool,
                        Reshape to (-1, C), MatMul+Add, Softmax; opset 13
    unsupported.onnx    Gemm, Sigmoid, Gemm, Tanh, Gemm (once two unsupported
                        ops, now a chain with two activations)
    branch.onnx         a residual connection
    resnet.onnx         small ResNet, opset 13: stem Conv+BN+Relu; basic
                        blocks (Conv+BN+Relu, Conv+BN, Add, Relu), one with a
                        projection shortcut (1x1 Conv stride 2 + BN);
                        GlobalAveragePool, Flatten, Gemm
    mbv2.onnx           small MobileNetV2, opset 17: stem Conv+BN+Clip
                        (ReLU6); inverted residual blocks (1x1 expand,
                        depthwise 3x3, 1x1 project, Add when stride 1), one
                        with HardSwish and a squeeze-and-excitation
                        (GlobalAveragePool, Conv, Relu, Conv, HardSigmoid, Mul
                        by (N, C, 1, 1)); 1x1 Conv+BN+Clip, GlobalAveragePool,
                        Flatten, Gemm
    inputs.f32.gz       the first 100 Fashion-MNIST test images, float32
                        (N, 1, 28, 28), pixel / 255 as the IDX loader scales
                        them (gzip: the raw file is 314 KB)
    NAME.out.f32        PyTorch's outputs of NAME.onnx on those inputs (100, 10)
    torch_accuracy.txt  PyTorch's accuracy of each model on the 10,000 test images
  tests/fixtures/png/   test image 0 as gray 8 and 16 bit, gray+alpha, RGB,
                        RGBA, palette, palette with transparency; a 32x32
                        gray image; a colour image; tiny 3x2 images
  tests/fuzz/corpus/onnx/  tiny models (each op, opsets 11, 13, 17) as seeds;
                        from onnx.helper (--only dag writes these): Add of
                        two branches, Mul by (N, C, 1, 1), Concat on axis 1,
                        depthwise and group-2 Conv, Clip with min/max inputs,
                        LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish
                        (opset 14), Conv+BatchNormalization in a branch,
                        Conv then SiLU as Sigmoid and Mul;
                        the opset-20 seeds torch2_*.onnx come from
                        scripts/make_onnx_torch2_seeds.py (no PyTorch needed)
  tests/fuzz/corpus/png/   small PNGs of every colour type and bit depth

Seeds are fixed (torch.manual_seed(0), one thread); the bytes may still
differ between PyTorch versions.
"""
import argparse
import gzip
import io
import os
import struct
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import torch
import torch.nn as nn
import torch.nn.utils.prune as prune

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIX = os.path.join(ROOT, "tests", "fixtures")
ONNX_DIR = os.path.join(FIX, "onnx")
PNG_DIR = os.path.join(FIX, "png")
CORPUS_ONNX = os.path.join(ROOT, "tests", "fuzz", "corpus", "onnx")
CORPUS_PNG = os.path.join(ROOT, "tests", "fuzz", "corpus", "png")
FASHION = "/usr/share/datasets/fashion-mnist"


def load_idx(name):
    with gzip.open(os.path.join(FASHION, name + ".gz"), "rb") as f:
        data = f.read()
    rank = data[3]
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def to_float(images):
    """uint8 (N, 28, 28) -> float32 (N, 1, 28, 28), v / 255 correctly rounded."""
    return (images.astype(np.float32) / np.float32(255.0))[:, None, :, :]


def train(model, x, y, epochs, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(x), generator=g)
        for i in range(0, len(x), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    model.eval()


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def export(model, shape, path, opset, names=("input", "logits")):
    f = io.BytesIO()
    torch.onnx.export(model, torch.zeros(*shape), f, opset_version=opset,
                      input_names=[names[0]], output_names=[names[1]],
                      dynamic_axes={names[0]: {0: "batch"}, names[1]: {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=True)
    m = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(m)
    m.producer_name = "pytorch"
    with open(path, "wb") as out:
        out.write(m.SerializeToString())
    return m


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


class Mlp(nn.Module):
    def __init__(self, widths=(784, 32, 10)):
        super().__init__()
        layers = [nn.Flatten()]
        for i in range(len(widths) - 1):
            layers.append(nn.Linear(widths[i], widths[i + 1]))
            if i < len(widths) - 2:
                layers += [nn.ReLU(), nn.Dropout(0.1)]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class Cnn(nn.Module):
    """conv+bn+relu+maxpool, conv+bn+relu+avgpool, flatten, fc."""
    def __init__(self, c=(1, 8, 16), hw=28, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(c[0], c[1], 3, padding=1)
        self.bn1 = nn.BatchNorm2d(c[1])
        self.conv2 = nn.Conv2d(c[1], c[2], 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c[2])
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(c[2] * (hw // 4) * (hw // 4), classes)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = nn.functional.avg_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


class CnnMatMul(nn.Module):
    """strided conv, max pool with padding, global average pooling, a
    reshape and a fully connected layer written as x @ W + b, softmax."""
    def __init__(self, c=(1, 8, 32), classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(c[0], c[1], 3, padding=1)
        self.bn1 = nn.BatchNorm2d(c[1])
        self.conv2 = nn.Conv2d(c[1], c[2], 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(c[2])
        self.w = nn.Parameter(torch.randn(c[2], classes) * 0.1)
        self.b = nn.Parameter(torch.zeros(classes))
        self.c = c[2]

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = torch.relu(self.bn2(self.conv2(x)))
        x = nn.functional.adaptive_avg_pool2d(x, 1).reshape(-1, self.c)
        return torch.softmax(x @ self.w + self.b, dim=1)


class CnnMatMulTrain(nn.Module):
    """CnnMatMul without its softmax, for training with cross-entropy."""
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        i = self.inner
        x = nn.functional.max_pool2d(torch.relu(i.bn1(i.conv1(x))), 3, 2, 1)
        x = torch.relu(i.bn2(i.conv2(x)))
        x = nn.functional.adaptive_avg_pool2d(x, 1).reshape(-1, i.c)
        return x @ i.w + i.b


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 8)
        self.b = nn.Linear(8, 8)
        self.c = nn.Linear(8, 4)

    def forward(self, x):
        return self.c(torch.tanh(self.b(torch.sigmoid(self.a(x)))))


class Branch(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)) + x)


class BasicBlock(nn.Module):
    """ResNet basic block: conv+bn+relu, conv+bn, add the shortcut, relu. The
    shortcut is a 1x1 conv (stride s) + bn where the size or channels change."""
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))


class ResNet(nn.Module):
    """stem conv+bn+relu (16 ch), blocks 16->16, 16->32 stride 2 (projection
    shortcut), 32->32; global average pooling, flatten, fc."""
    def __init__(self, c=(16, 32), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c[0], 3, 1, 1, bias=False), nn.BatchNorm2d(c[0]), nn.ReLU())
        self.blocks = nn.Sequential(BasicBlock(c[0], c[0]), BasicBlock(c[0], c[1], 2), BasicBlock(c[1], c[1]))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c[1], classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


class SqueezeExcite(nn.Module):
    """global average pool, 1x1 conv, relu, 1x1 conv, hardsigmoid, x * s."""
    def __init__(self, c, r=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        return x * self.gate(self.fc2(torch.relu(self.fc1(self.pool(x)))))


class InvertedResidual(nn.Module):
    """1x1 expand conv+bn+act, 3x3 depthwise conv+bn+act, [squeeze-excite],
    1x1 project conv+bn (linear), plus x when the stride is 1 and the
    channels match. act is ReLU6 (Clip) or Hardswish."""
    def __init__(self, cin, cout, stride, expand=4, se=False, act=nn.ReLU6):
        super().__init__()
        mid = cin * expand
        layers = [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act(),
                  nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), act()]
        if se:
            layers.append(SqueezeExcite(mid))
        layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    """stem conv+bn+relu6 (16 ch), inverted residual blocks 16->16, 16->24
    stride 2, 24->24 with hardswish and squeeze-excite, 24->32 stride 2;
    1x1 conv+bn+relu6 (128 ch), global average pooling, flatten, fc."""
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
        self.blocks = nn.Sequential(
            InvertedResidual(16, 16, 1),
            InvertedResidual(16, 24, 2),
            InvertedResidual(24, 24, 1, se=True, act=nn.Hardswish),
            InvertedResidual(24, 32, 2))
        self.head = nn.Sequential(nn.Conv2d(32, 128, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU6())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.head(self.blocks(self.stem(x)))), 1))


# ---- PNG writing (the format itself: no imaging library needed) ------------

def png_chunk(kind, data):
    c = zlib.crc32(kind + data) & 0xffffffff
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", c)


def png(width, height, color_type, depth, rows, plte=None, trns=None):
    """rows: a list of byte strings, one per row, already packed."""
    raw = b"".join(b"\x00" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n"
    out += png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0))
    if plte is not None:
        out += png_chunk(b"PLTE", plte)
    if trns is not None:
        out += png_chunk(b"tRNS", trns)
    out += png_chunk(b"IDAT", zlib.compress(raw, 9))
    out += png_chunk(b"IEND", b"")
    return out


def png_gray8(img):
    return png(img.shape[1], img.shape[0], 0, 8, [bytes(r) for r in img.astype(np.uint8)])


def png_gray16(img16):
    return png(img16.shape[1], img16.shape[0], 0, 16, [r.astype(">u2").tobytes() for r in img16])


def png_images(img):
    """test image 0 (uint8 28x28) in every colour type dcz reads."""
    h, w = img.shape
    g = img.astype(np.uint8)
    out = {
        "gray8.png": png_gray8(g),
        "gray16.png": png_gray16(g.astype(np.uint16) * 257),
        "gray_alpha.png": png(w, h, 4, 8, [bytes(np.stack([r, np.full(w, 255, np.uint8)], 1).ravel()) for r in g]),
        "rgb.png": png(w, h, 2, 8, [bytes(np.repeat(r, 3)) for r in g]),
        "rgba16.png": png(w, h, 6, 16, [np.stack([r, r, r, np.full(w, 65535, np.uint16)], 1).astype(">u2").ravel().tobytes()
                                       for r in g.astype(np.uint16) * 257]),
    }
    # palette of the gray levels used; index = rank of the level
    levels = np.unique(g)
    index = np.searchsorted(levels, g).astype(np.uint8)
    plte = b"".join(bytes([v, v, v]) for v in levels)
    out["palette.png"] = png(w, h, 3, 8, [bytes(r) for r in index], plte=plte)
    # the same with transparency on level 0 (black): composited over black
    out["palette_trns.png"] = png(w, h, 3, 8, [bytes(r) for r in index], plte=plte,
                                  trns=bytes([0] + [255] * (len(levels) - 1)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="writes the ONNX and PNG test fixtures of dcz")
    ap.add_argument("--only", choices=["dag"],
                    help="dag: write only resnet.onnx, mbv2.onnx, their outputs and "
                         "accuracies, and the onnx.helper seeds of the non-chain ops")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    for d in (ONNX_DIR, PNG_DIR, CORPUS_ONNX, CORPUS_PNG):
        os.makedirs(d, exist_ok=True)

    xtr_u8, ytr = load_idx("train-images-idx3-ubyte"), load_idx("train-labels-idx1-ubyte")
    xte_u8, yte = load_idx("t10k-images-idx3-ubyte"), load_idx("t10k-labels-idx1-ubyte")
    xtr = torch.from_numpy(to_float(xtr_u8[:12000]))
    ytr_t = torch.from_numpy(ytr[:12000].astype(np.int64))
    xte = torch.from_numpy(to_float(xte_u8))
    yte_t = torch.from_numpy(yte.astype(np.int64))
    if args.only is None:
        chain_fixtures(xtr, ytr_t, xte, yte_t, xte_u8)
    dag_fixtures(xtr, ytr_t, xte, yte_t)


def chain_fixtures(xtr, ytr_t, xte, yte_t, xte_u8):
    """the chain models, their outputs, inputs.f32.gz, PNGs and the seeds."""
    ref = xte[:100].contiguous()

    write(os.path.join(ONNX_DIR, "inputs.f32.gz"),
          gzip.compress(ref.numpy().astype("<f4").tobytes(), 9, mtime=0))
    accs = []

    def save(name, model, opset, shape=(1, 1, 28, 28)):
        export(model, shape, os.path.join(ONNX_DIR, name + ".onnx"), opset)
        with torch.no_grad():
            out = model(ref).numpy().astype("<f4")
        write(os.path.join(ONNX_DIR, name + ".out.f32"), out.tobytes())
        acc = accuracy(model, xte, yte_t)
        accs.append("%s %.4f\n" % (name, acc))
        print("%-12s opset %d  test accuracy %.4f" % (name, opset, acc))

    mlp = Mlp()
    train(mlp, xtr, ytr_t, 2, 0.05)
    save("mlp", mlp, 11)

    cnn = Cnn()
    train(cnn, xtr, ytr_t, 2, 0.05)
    prune.l1_unstructured(cnn.conv2, "weight", amount=0.5)
    prune.l1_unstructured(cnn.fc, "weight", amount=0.8)
    prune.remove(cnn.conv2, "weight")
    prune.remove(cnn.fc, "weight")
    save("cnn", cnn, 17)

    cm = CnnMatMul()
    train(CnnMatMulTrain(cm), xtr, ytr_t, 3, 0.05)
    save("cnn_matmul", cm, 13)

    write(os.path.join(ONNX_DIR, "torch_accuracy.txt"), "".join(accs).encode())

    export(Unsupported().eval(), (1, 16), os.path.join(ONNX_DIR, "unsupported.onnx"), 13)
    export(Branch().eval(), (1, 16), os.path.join(ONNX_DIR, "branch.onnx"), 13)

    # PNG images of test image 0, and a few more
    for name, data in png_images(xte_u8[0]).items():
        write(os.path.join(PNG_DIR, "img0_" + name), data)
    big = np.zeros((32, 32), np.uint8)
    big[2:30, 2:30] = xte_u8[0]
    write(os.path.join(PNG_DIR, "img0_32x32.png"), png_gray8(big))
    rng = np.random.RandomState(0)
    col = rng.randint(0, 256, size=(28, 28, 3)).astype(np.uint8)
    write(os.path.join(PNG_DIR, "colour_rgb.png"), png(28, 28, 2, 8, [bytes(r.ravel()) for r in col]))

    # fuzz seeds: tiny models through every supported op, and tiny PNGs
    seeds = {
        "mlp_opset11": (Mlp((16, 8, 4)), (1, 16), 11),
        "cnn_bn_opset17": (Cnn((1, 2, 3), 8, 4), (1, 1, 8, 8), 17),
        "cnn_matmul_opset13": (CnnMatMul((1, 2, 3), 4), (1, 1, 8, 8), 13),
        "cnn_bn_opset11": (Cnn((2, 2, 2), 4, 3), (1, 2, 4, 4), 11),
    }
    for name, (model, shape, opset) in seeds.items():
        model.eval()
        export(model, shape, os.path.join(CORPUS_ONNX, name + ".onnx"), opset)
    with open(os.path.join(ONNX_DIR, "unsupported.onnx"), "rb") as f:
        write(os.path.join(CORPUS_ONNX, "unsupported.onnx"), f.read())
    with open(os.path.join(ONNX_DIR, "branch.onnx"), "rb") as f:
        write(os.path.join(CORPUS_ONNX, "branch.onnx"), f.read())
    with open(os.path.join(CORPUS_ONNX, "cnn_bn_opset17.onnx"), "rb") as f:
        whole = f.read()
    write(os.path.join(CORPUS_ONNX, "truncated.onnx"), whole[:len(whole) // 2])
    write(os.path.join(CORPUS_ONNX, "helper_ops.onnx"), helper_model().SerializeToString())

    tiny = np.array([[0, 128, 255], [7, 64, 200]], np.uint8)
    for name, data in png_images(tiny).items():
        write(os.path.join(CORPUS_PNG, "tiny_" + name), data)
    write(os.path.join(CORPUS_PNG, "tiny_gray16_big_endian.png"), png_gray16(np.array([[0, 1], [65535, 256]], np.uint16)))
    g8 = png_gray8(tiny)
    write(os.path.join(CORPUS_PNG, "truncated.png"), g8[:len(g8) - 20])
    bad = bytearray(g8)
    bad[40] ^= 0xff
    write(os.path.join(CORPUS_PNG, "bad_crc.png"), bytes(bad))


def read_inputs():
    """the 100 reference inputs from inputs.f32.gz, (100, 1, 28, 28)."""
    with open(os.path.join(ONNX_DIR, "inputs.f32.gz"), "rb") as f:
        raw = gzip.decompress(f.read())
    return torch.from_numpy(np.frombuffer(raw, dtype="<f4").astype(np.float32).reshape(100, 1, 28, 28))


def append_accuracy(lines):
    """appends "name acc" lines to torch_accuracy.txt; an earlier line of the
    same name is dropped, the other lines are kept as they are."""
    path = os.path.join(ONNX_DIR, "torch_accuracy.txt")
    names = {l.split()[0] for l in lines}
    old = []
    if os.path.exists(path):
        with open(path) as f:
            old = [l if l.endswith("\n") else l + "\n" for l in f if l.strip() and l.split()[0] not in names]
    write(path, "".join(old + lines).encode())


def dag_fixtures(xtr, ytr_t, xte, yte_t):
    """resnet.onnx and mbv2.onnx (not chains), their outputs on the inputs of
    inputs.f32.gz, their accuracies, and the onnx.helper seeds of their ops."""
    torch.manual_seed(0)
    ref = read_inputs()
    assert torch.equal(ref, xte[:100]), "inputs.f32.gz is not the first 100 test images"
    accs = []
    for name, model, opset in (("resnet", ResNet(), 13), ("mbv2", MobileNetV2(), 17)):
        train(model, xtr, ytr_t, 2, 0.05)
        train(model, xtr, ytr_t, 1, 0.005)  # settles the last steps' noise
        export(model, (1, 1, 28, 28), os.path.join(ONNX_DIR, name + ".onnx"), opset)
        with torch.no_grad():
            out = model(ref).numpy().astype("<f4")
        write(os.path.join(ONNX_DIR, name + ".out.f32"), out.tobytes())
        acc = accuracy(model, xte, yte_t)
        accs.append("%s %.4f\n" % (name, acc))
        print("%-12s opset %d  test accuracy %.4f" % (name, opset, acc))
    append_accuracy(accs)
    for name, m in dag_seeds().items():
        write(os.path.join(CORPUS_ONNX, name + ".onnx"), m.SerializeToString())


def dag_seeds():
    """tiny onnx.helper models, one per op of the non-chain models; input x
    (N, 2, 4, 4) unless said otherwise."""
    rng = np.random.RandomState(2)

    def w(name, *shape):
        return numpy_helper.from_array(rng.randn(*shape).astype(np.float32), name)

    def c(name, v):
        return numpy_helper.from_array(np.array(v, np.float32), name)

    def model(name, nodes, inits=(), opset=13, cin=2, out=(2, 4, 4)):
        graph = helper.make_graph(
            nodes, name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", cin, 4, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"] + list(out))],
            initializer=list(inits))
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx.helper")
        m.ir_version = 7
        onnx.checker.check_model(m, full_check=True)
        return m

    def unary(op, opset=13, **attrs):
        return model(op.lower(), [helper.make_node(op, ["x"], ["y"], **attrs)], opset=opset)

    n = helper.make_node
    seeds = {
        # y = Conv1x1(x) + Relu(x)
        "add_branches_opset13": model("add_branches", [
            n("Conv", ["x", "w", "b"], ["a"]), n("Relu", ["x"], ["r"]), n("Add", ["a", "r"], ["y"])],
            [w("w", 2, 2, 1, 1), w("b", 2)]),
        # y = x * GlobalAveragePool(x), the second input (N, C, 1, 1)
        "mul_channel_opset13": model("mul_channel", [
            n("GlobalAveragePool", ["x"], ["s"]), n("Mul", ["x", "s"], ["y"])]),
        # y = Concat(Relu(x), Conv1x1(x) to 1 channel) on axis 1: (N, 3, 4, 4)
        "concat_axis1_opset13": model("concat_axis1", [
            n("Relu", ["x"], ["r"]), n("Conv", ["x", "w"], ["a"]), n("Concat", ["r", "a"], ["y"], axis=1)],
            [w("w", 1, 2, 1, 1)], out=(3, 4, 4)),
        "conv_depthwise_opset13": model("conv_depthwise", [
            n("Conv", ["x", "w", "b"], ["y"], group=2, kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
            [w("w", 2, 1, 3, 3), w("b", 2)]),
        # x (N, 4, 4, 4), two groups of 2 channels to 2 channels, stride 2
        "conv_group2_opset13": model("conv_group2", [
            n("Conv", ["x", "w", "b"], ["y"], group=2, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])],
            [w("w", 4, 2, 3, 3), w("b", 4)], cin=4, out=(4, 2, 2)),
        "clip_opset13": model("clip", [n("Clip", ["x", "lo", "hi"], ["y"])], [c("lo", 0.0), c("hi", 6.0)]),
        "leakyrelu_opset13": unary("LeakyRelu", alpha=0.1),
        "sigmoid_opset13": unary("Sigmoid"),
        "tanh_opset13": unary("Tanh"),
        "hardsigmoid_opset13": unary("HardSigmoid", alpha=1.0 / 6, beta=0.5),
        "hardswish_opset14": unary("HardSwish", opset=14),
        # y = Relu(BN(Conv3x3(x)) + x)
        "conv_bn_branch_opset13": model("conv_bn_branch", [
            n("Conv", ["x", "w"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            n("BatchNormalization", ["a", "scale", "bias", "mean", "var"], ["bn"], epsilon=1e-5),
            n("Add", ["bn", "x"], ["s"]), n("Relu", ["s"], ["y"])],
            [w("w", 2, 2, 3, 3), w("scale", 2), w("bias", 2), w("mean", 2),
             numpy_helper.from_array(rng.uniform(0.5, 2.0, 2).astype(np.float32), "var")]),
        # y = h * Sigmoid(h), h = Conv3x3(x): SiLU as exporters write it, one
        # SILU layer (last: the weights drawn before stay those of the seeds above)
        "silu_opset13": model("silu", [
            n("Conv", ["x", "w", "b"], ["h"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            n("Sigmoid", ["h"], ["s"]), n("Mul", ["h", "s"], ["y"])],
            [w("w", 2, 2, 3, 3), w("b", 2)]),
        # x (N, 4, 4, 4): Relu, then ShuffleNet's unit as PyTorch 1.13 exports it, the
        # shapes computed by Shape, Gather, Div, Unsqueeze and Concat around
        # Reshape, Transpose, Reshape, then Split in two, Relu of the second,
        # Concat: CHANNEL_SHUFFLE and SLICE layers, the shape nodes folded
        "shuffle_fold_opset13": model("shuffle_fold", [
            n("Relu", ["x"], ["h"]), n("Shape", ["h"], ["shp"]),
            n("Constant", [], ["i0"], value_int=0), n("Gather", ["shp", "i0"], ["b"], axis=0),
            n("Constant", [], ["i1"], value_int=1), n("Gather", ["shp", "i1"], ["ch"], axis=0),
            n("Constant", [], ["two"], value_int=2), n("Div", ["ch", "two"], ["half"]),
            n("Cast", ["half"], ["halfc"], to=TensorProto.INT64),
            n("Unsqueeze", ["b", "ax0"], ["ub"]), n("Unsqueeze", ["halfc", "ax0"], ["uh"]),
            n("Concat", ["ub", "g2", "uh", "hw"], ["s5"], axis=0),
            n("Reshape", ["h", "s5"], ["v"]), n("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3, 4]),
            n("Concat", ["ub", "m1", "hw"], ["s4"], axis=0), n("Reshape", ["vt", "s4"], ["s"]),
            n("Split", ["s", "sizes"], ["p0", "p1"], axis=1), n("Relu", ["p1"], ["q1"]),
            n("Concat", ["p0", "q1"], ["y"], axis=1)],
            [numpy_helper.from_array(np.array(v, np.int64), nm) for nm, v in
             (("ax0", [0]), ("g2", [2]), ("hw", [4, 4]), ("m1", [-1]), ("sizes", [2, 2]))], cin=4,
            out=(4, 4, 4)),
        # BatchNormalization on the input and after a Relu: nothing to fold
        # into, per-channel affines (depthwise 1x1 CONV2D)
        "bn_affine_opset13": model("bn_affine", [
            n("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["a"], epsilon=1e-5),
            n("Relu", ["a"], ["r"]),
            n("BatchNormalization", ["r", "scale", "bias", "mean", "var"], ["y"], epsilon=1e-5)],
            [w("scale", 2), w("bias", 2), w("mean", 2),
             numpy_helper.from_array(rng.uniform(0.5, 2.0, 2).astype(np.float32), "var")]),
    }
    return seeds


def helper_model():
    """A model PyTorch does not write: Constant nodes (a tensor and value_ints),
    Identity and Dropout nodes, Gemm with transB 0, alpha and beta, a Reshape
    whose shape keeps the batch dimension with 0, weights as float_data."""
    rng = np.random.RandomState(1)
    w1 = rng.randn(12, 6).astype(np.float32)   # (K, N): transB = 0
    b1 = rng.randn(6).astype(np.float32)
    w2 = rng.randn(4, 6).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(np.array([0, -1], np.int64))),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("Identity", ["flat"], ["flat2"]),
        helper.make_node("Gemm", ["flat2", "w1", "b1"], ["h"], alpha=0.5, beta=2.0),
        helper.make_node("Dropout", ["h", "ratio"], ["hd", "mask"]),
        helper.make_node("Relu", ["hd"], ["r"]),
        helper.make_node("Constant", [], ["w2c"], value=helper.make_tensor("w2c", TensorProto.FLOAT, [4, 6], w2.ravel().tolist())),
        helper.make_node("Gemm", ["r", "w2c"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "helper_ops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        initializer=[helper.make_tensor("w1", TensorProto.FLOAT, [12, 6], w1.ravel().tolist()),
                     numpy_helper.from_array(b1, "b1"),
                     numpy_helper.from_array(np.array(0.25, np.float32), "ratio")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="onnx.helper")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


if __name__ == "__main__":
    sys.exit(main())
