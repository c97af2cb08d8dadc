"""Layers: each one calls its tier's ops in `forward` and `backward` (see `base.Layer`)."""

from nn.layers.activations import LeakyReLU, ReLU, Sigmoid, Tanh
from nn.layers.base import Layer
from nn.layers.batchnorm import BatchNorm
from nn.layers.containers import Residual, Sequential
from nn.layers.conv import Conv2d
from nn.layers.dropout import Dropout
from nn.layers.flatten import Flatten
from nn.layers.linear import Linear
from nn.layers.pooling import AvgPool2d, MaxPool2d

__all__ = [
    "AvgPool2d",
    "BatchNorm",
    "Conv2d",
    "Dropout",
    "Flatten",
    "Layer",
    "LeakyReLU",
    "Linear",
    "MaxPool2d",
    "ReLU",
    "Residual",
    "Sequential",
    "Sigmoid",
    "Tanh",
]
