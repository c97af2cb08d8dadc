"""Fused layers: a MaxPool2d followed by a ReLU runs as one op where the tier has it.

relu(maxpool(x)) in one pass reads the input and writes the pooled map once, where the two ops
write it, read it and write it again; backward likewise (the pooling routes dy only where the
fused output is positive, as ReLU's backward would pass it). Same numbers, bit for bit: a max and
a comparison, no arithmetic. The tier says it can by having maxpool2d_relu_forward and
maxpool2d_relu_backward (stage 4's nvcc variant: an extra, not an op of the contract); on every
other tier the layers run as written. The model is unchanged (its layers, describe(), its
checkpoints): only the pair's work moves into the MaxPool2d, and the ReLU passes its input and
its gradient through.
"""

from itertools import pairwise

from nn.layers.activations import ReLU
from nn.layers.pooling import MaxPool2d

FUSED_OPS = ("maxpool2d_relu_forward", "maxpool2d_relu_backward")


def fuse_pool_relu(layers, tier):
    """Fuse each MaxPool2d of the list `layers` that a ReLU follows, where `tier` can."""
    can = all(hasattr(tier, op) for op in FUSED_OPS)
    for pool, relu in pairwise(layers):
        if type(pool) is MaxPool2d and type(relu) is ReLU:
            pool.relu_fused = relu.fused_into_previous = can
