"""The peers' models, as Kiln's presets (src/nn/zoo.c) define them (torch only, so the GPU peer
does not need numpy)."""
import torch.nn as nn


def fashion_cnn():
    # Keras 'same' padding for 3x3 stride 1 = padding 1
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def cifar_cnn():
    # TF tutorial CNN; MaxPool 3 stride 2 'same' on 32 -> 16 -> 8 (padding=1 gives the same sizes)
    return nn.Sequential(
        nn.Conv2d(3, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
        nn.Conv2d(64, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 384), nn.ReLU(), nn.Linear(384, 192), nn.ReLU(),
        nn.Linear(192, 10))
