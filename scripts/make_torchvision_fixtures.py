#!/usr/bin/python3
"""make_torchvision_fixtures.py: the classification networks torchvision
ships, exported by Debian's PyTorch (1.13) at opset 13, with inputs and
PyTorch's outputs, for checking dcz's importer on networks at real size.

Run with Debian's Python (python3-torch, python3-torchvision):

    /usr/bin/python3 scripts/make_torchvision_fixtures.py OUTDIR [NAME ...]

writes, for each network (default: all nine below), into OUTDIR:
    NAME.onnx           torch.onnx.export(model, x, opset_version=13), the
                        batch dimension dynamic; weights inside the file
    NAME.in.f32         two input samples, float32 (2, 3, 224, 224)
    NAME.logits.f32     PyTorch's outputs for them, float32 (2, 1000)

The files are large (up to 100 MB for ResNet-50) and not committed;
scripts/check_torchvision.sh imports and compares them. Weights are
torchvision's random initialization under torch.manual_seed(0) (no
download), batch-norm running statistics perturbed away from (0, 1) so that
folding them is exercised; the inputs are seeded normal values.
"""
import os
import sys

import torch
import torchvision

NETWORKS = {
    "resnet18": lambda: torchvision.models.resnet18(),
    "resnet50": lambda: torchvision.models.resnet50(),
    "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(),
    "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(),
    "squeezenet1_1": lambda: torchvision.models.squeezenet1_1(),
    "regnet_x_400mf": lambda: torchvision.models.regnet_x_400mf(),
    "shufflenet_v2_x1_0": lambda: torchvision.models.shufflenet_v2_x1_0(),
    "densenet121": lambda: torchvision.models.densenet121(),
}


def perturb(model, gen):
    """Batch-norm statistics and affine parameters away from their defaults."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(0.2 * torch.randn(c, generator=gen))
            m.running_var.copy_(0.5 + torch.rand(c, generator=gen))
            m.weight.data.copy_(1.0 + 0.2 * torch.randn(c, generator=gen))
            m.bias.data.copy_(0.1 * torch.randn(c, generator=gen))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    names = sys.argv[2:] or list(NETWORKS)
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for name in names:
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        model = NETWORKS[name]().eval()
        with torch.no_grad():
            perturb(model, gen)
            x = torch.randn(2, 3, 224, 224, generator=gen)
            y = model(x)
        path = os.path.join(out, name + ".onnx")
        torch.onnx.export(model, x, path, opset_version=13, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
        x.numpy().astype("<f4").tofile(os.path.join(out, name + ".in.f32"))
        y.numpy().astype("<f4").tofile(os.path.join(out, name + ".logits.f32"))
        print(f"{name}: {os.path.getsize(path)} bytes, logits {tuple(y.shape)}")


if __name__ == "__main__":
    main()
