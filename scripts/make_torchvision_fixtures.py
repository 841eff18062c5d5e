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
    NAME.photo.f32      PyTorch's outputs for photo.jpg, float32 (1, 1000), through
                        torchvision's evaluation transform: Resize(256),
                        CenterCrop(224), ToTensor(), Normalize(ImageNet's
                        mean and std) on PIL.Image.open(...).convert("RGB")
and once:
    photo.jpg           a 400x300 RGB JPEG (a seeded smooth pattern with noise)

The files are large (up to 100 MB for ResNet-50) and not committed;
scripts/check_torchvision.sh imports and compares them. Weights are
torchvision's random initialization under torch.manual_seed(0) (no
download), batch-norm running statistics perturbed away from (0, 1) so that
folding them is exercised; the inputs are seeded normal values.
"""
import os
import sys

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision import transforms

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


def photo(path):
    """A 400x300 RGB JPEG of a seeded smooth pattern with noise."""
    rng = np.random.RandomState(7)
    y, x = np.mgrid[0:300, 0:400].astype(np.float64)
    planes = [127 + 90 * np.sin(x / (17 + 5 * k) + y / (23 + 3 * k) + k) + rng.randn(300, 400) * 20 for k in range(3)]
    Image.fromarray(np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)).save(path, quality=92)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    names = sys.argv[2:] or list(NETWORKS)
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    photo(os.path.join(out, "photo.jpg"))
    evaluate = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                                   transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    pic = evaluate(Image.open(os.path.join(out, "photo.jpg")).convert("RGB")).unsqueeze(0)
    for name in names:
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        model = NETWORKS[name]().eval()
        with torch.no_grad():
            perturb(model, gen)
            x = torch.randn(2, 3, 224, 224, generator=gen)
            y = model(x)
            yp = model(pic)
        path = os.path.join(out, name + ".onnx")
        torch.onnx.export(model, x, path, opset_version=13, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
        x.numpy().astype("<f4").tofile(os.path.join(out, name + ".in.f32"))
        y.numpy().astype("<f4").tofile(os.path.join(out, name + ".logits.f32"))
        yp.numpy().astype("<f4").tofile(os.path.join(out, name + ".photo.f32"))
        print(f"{name}: {os.path.getsize(path)} bytes, logits {tuple(y.shape)}")


if __name__ == "__main__":
    main()
