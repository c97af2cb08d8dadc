"""Layers: each one calls its tier's ops in `forward` and `backward` (see `base.Layer`)."""

from nn.layers.activations import GELU, LeakyReLU, ReLU, Sigmoid, Tanh
from nn.layers.attention import MultiHeadAttention
from nn.layers.base import Layer
from nn.layers.batchnorm import BatchNorm
from nn.layers.containers import Residual, Sequential
from nn.layers.conv import Conv2d
from nn.layers.dropout import Dropout
from nn.layers.flatten import Flatten
from nn.layers.layernorm import LayerNorm
from nn.layers.linear import Linear
from nn.layers.pooling import AvgPool2d, MaxPool2d
from nn.layers.tokens import MeanOverTokens, PatchEmbedding, PositionEmbedding, Tokenwise

__all__ = [
    "AvgPool2d",
    "BatchNorm",
    "Conv2d",
    "Dropout",
    "Flatten",
    "GELU",
    "Layer",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "MaxPool2d",
    "MeanOverTokens",
    "MultiHeadAttention",
    "PatchEmbedding",
    "PositionEmbedding",
    "ReLU",
    "Residual",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "Tokenwise",
]
