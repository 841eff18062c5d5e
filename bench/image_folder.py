#!/usr/bin/env python3
"""image_folder.py: a generated image folder for timing training on
photo-sized inputs (bench/torch_train.py resnet18, dcz train --data ROOT):

    python3 bench/image_folder.py ROOT CLASSES TRAIN_PER_CLASS TEST_PER_CLASS SIZE

writes ROOT/{train,test}/cNN/iNNNN.jpg, RGB JPEGs of SIZE x SIZE pixels:
each class a colour of its own under seeded noise, so that a network can
learn something, though what it learns is not the point. Needs numpy and
Pillow (a GPU machine's PyTorch image has both).
"""
import os
import sys

import numpy as np
from PIL import Image


def main():
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    root = sys.argv[1]
    classes, per_train, per_test, size = (int(a) for a in sys.argv[2:])
    rng = np.random.default_rng(1)
    for split, per in (("train", per_train), ("test", per_test)):
        for c in range(classes):
            folder = os.path.join(root, split, "c%02d" % c)
            os.makedirs(folder, exist_ok=True)
            colour = np.array([(c * 97) % 256, (c * 53 + 80) % 256, (c * 31 + 160) % 256], dtype=np.float32)
            for i in range(per):
                noise = rng.normal(0, 60, (size, size, 3)).astype(np.float32)
                pixels = np.clip(colour + noise, 0, 255).astype(np.uint8)
                Image.fromarray(pixels, "RGB").save(os.path.join(folder, "i%04d.jpg" % i), quality=90)


if __name__ == "__main__":
    main()
