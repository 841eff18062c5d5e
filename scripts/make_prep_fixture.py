#!/usr/bin/python3
"""make_prep_fixture.py: images and torchvision's preprocessing of them, for
the test of dcz's (tests/unit/test_png.c, train/prep.c).

Run from the repository root with Debian's Python (python3-torchvision,
python3-pil):

    /usr/bin/python3 scripts/make_prep_fixture.py

writes tests/fixtures/prep/:
    photo.jpg   61x45 RGB JPEG (a seeded smooth pattern with noise)
    small.png   20x13 RGB PNG
    tall.jpg    33x50 gray JPEG
    NAME.f32    torchvision's tensor, float32 (C, H, W), of
                Compose([Resize(R), CenterCrop(CROP), ToTensor(),
                Normalize(ImageNet's mean and std)]) on
                PIL.Image.open(NAME).convert("RGB"):
                photo R 32, CROP 28 (shrinking); small R 40, CROP (36, 30)
                (enlarging); tall R 33, CROP (31, 30) (no resampling;
                crops whose halves round to even)
    photo-boxes.f32
                the random crop of training as torchvision computes it
                for each box of BOXES, one tensor after the other:
                Normalize(ToTensor(F.resized_crop(photo, top, left, height,
                width, [out_h, out_w]))), the boxes drawn by hand to shrink,
                enlarge, keep one axis and take the whole image
"""
import os

import numpy as np
import torch
from PIL import Image
from torchvision import transforms
from torchvision.transforms import functional as F

OUT = "tests/fixtures/prep"
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
CASES = {"photo.jpg": (32, 28), "small.png": (40, (36, 30)), "tall.jpg": (33, (31, 30))}
# (top, left, height, width, out_h, out_w) on photo.jpg (61x45); the same
# list is in tests/unit/test_png.c
BOXES = [(5, 7, 30, 40, 28, 28), (10, 20, 9, 11, 28, 28), (3, 2, 28, 50, 28, 28), (0, 0, 45, 61, 24, 32)]


def pattern(w, h, c, seed):
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    planes = [127 + 100 * np.sin(x / (3 + k) + y / (5 + 2 * k) + k) + rng.randn(h, w) * 12 for k in range(c)]
    a = np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)
    return a[:, :, 0] if c == 1 else a


def main():
    os.makedirs(OUT, exist_ok=True)
    Image.fromarray(pattern(61, 45, 3, 1)).save(os.path.join(OUT, "photo.jpg"), quality=90)
    Image.fromarray(pattern(20, 13, 3, 2)).save(os.path.join(OUT, "small.png"))
    Image.fromarray(pattern(33, 50, 1, 3)).save(os.path.join(OUT, "tall.jpg"), quality=85)
    for name, (resize, crop) in CASES.items():
        t = transforms.Compose([transforms.Resize(resize), transforms.CenterCrop(crop), transforms.ToTensor(),
                                transforms.Normalize(MEAN, STD)])
        x = t(Image.open(os.path.join(OUT, name)).convert("RGB"))
        x.numpy().astype("<f4").tofile(os.path.join(OUT, os.path.splitext(name)[0] + ".f32"))
        print(name, tuple(x.shape))
    photo = Image.open(os.path.join(OUT, "photo.jpg")).convert("RGB")
    norm = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    boxes = [norm(F.resized_crop(photo, t, l, h, w, [oh, ow])) for t, l, h, w, oh, ow in BOXES]
    torch.cat([b.flatten() for b in boxes]).numpy().astype("<f4").tofile(os.path.join(OUT, "photo-boxes.f32"))
    print("photo-boxes", [tuple(b.shape) for b in boxes])


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
