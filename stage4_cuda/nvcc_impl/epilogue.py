"""The fused bias + activation epilogue (csrc/epilogue.cu): an extra of the nvcc variant, not an
op of the contract. `bias_relu(x, b)` equals `relu(add(x, b))` and reads and writes the matrix
once instead of twice (`python -m bench.memory_bound` times both)."""

from argcheck import arrays

from ..runtime import device
from ._checks import TIER
from ._library import call


def bias_relu(x, b):
    """relu(x + b) for x [N, M] and b [M] (added to every row) -> [N, M]."""
    op = "bias_relu"
    x, (n, m) = arrays.array(TIER, op, "x", x, "N, M")
    b = arrays.array(TIER, op, "b", b, "M", hint=" (M: x's columns)", M=m)[0]
    y = device.empty((n, m))
    call("s2c_cuda_bias_relu", x, b, y, n, m)
    return y
