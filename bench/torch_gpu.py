"""torch_gpu.py: latency of networks in PyTorch on a CUDA GPU, host to host,
timed as `dcz bench --device gpu` times dcz, for the GPU table of
scripts/gpu-check.sh.

    python3 bench/torch_gpu.py [--export DIR] [--runs N] NAME ...

NAME: lenet300, lenet5 (as bench/torch_latency.py defines them),
resnet18, mobilenet_v2 (torchvision's, 3x224x224). For each network, at
batch 1 and 64: fp32 with TF32 off; the input copied from a host array into
pinned host memory, then one CUDA graph replayed that copies it to the
device, runs the forward pass and copies the output back to pinned host
memory, then the output copied out: the time of all of it, median and p99
of N runs after warm-up. Prints one line per network and batch:
    torch NAME batch B median_us X p99_us Y
--export DIR also writes DIR/NAME.onnx by torch.onnx.export(model, (x,),
path) with no other argument (PyTorch's default exporter), for dcz import.
Weights are torchvision's random initialization under torch.manual_seed(0):
latency does not depend on their values. Exit 3 without torch, torchvision
or a CUDA device.
"""
import os
import sys
import time

try:
    import torch
    import torchvision
except ImportError:
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_latency  # noqa: E402  (the LeNets, defined once)


def network(name):
    if name in ("lenet300", "lenet5"):
        return getattr(torch_latency, name)()
    if name in ("resnet18", "mobilenet_v2"):
        return getattr(torchvision.models, name)(), (1, 3, 224, 224)
    raise SystemExit("torch_gpu.py: unknown network %s" % name)


def timed(model, shape, batch, runs, warmup=20):
    dev = torch.device("cuda")
    src = torch.randn((batch,) + shape[1:])
    h_in = torch.empty_like(src).pin_memory()
    with torch.inference_mode():
        d_in = torch.empty(h_in.shape, device=dev)
        h_out = torch.empty(model(d_in).shape).pin_memory()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):   # warm-up outside the graph, as capture asks
            for _ in range(3):
                d_in.copy_(h_in, non_blocking=True)
                h_out.copy_(model(d_in), non_blocking=True)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            d_in.copy_(h_in, non_blocking=True)
            h_out.copy_(model(d_in), non_blocking=True)
        out = torch.empty(h_out.shape)
        us = []
        for i in range(warmup + runs):
            t0 = time.perf_counter()
            h_in.copy_(src)
            g.replay()
            torch.cuda.synchronize()
            out.copy_(h_out)
            if i >= warmup:
                us.append((time.perf_counter() - t0) * 1e6)
    us.sort()
    return us[len(us) // 2], us[min(len(us) - 1, int(0.99 * len(us)))]


def main(argv):
    if not torch.cuda.is_available():
        sys.exit(3)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    export, runs, names = None, 200, []
    it = iter(argv)
    for a in it:
        if a == "--export":
            export = next(it)
        elif a == "--runs":
            runs = int(next(it))
        else:
            names.append(a)
    for name in names:
        torch.manual_seed(0)
        model, shape = network(name)
        model.eval()
        if export:
            os.makedirs(export, exist_ok=True)
            torch.onnx.export(model, (torch.randn(shape),), os.path.join(export, name + ".onnx"))
        model = model.cuda()
        for batch in (1, 64):
            med, p99 = timed(model, shape, batch, runs)
            print("torch %s batch %d median_us %.1f p99_us %.1f" % (name, batch, med, p99), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
