"""The work of an op: args -> (flops or None, bytes moved), for the GFLOP/s and GB/s reported."""

import numpy as np

from .builders import conv_out


def _numel(*arrays):
    return sum(int(np.prod(a.shape)) for a in arrays)


def conv_flops(args):
    """Multiply-adds of a convolution, times 2, from its x and w (or dy) arguments."""
    n, c, h, w = args["x"].shape
    k, _, r, s = args["w"].shape
    stride, padding = args["stride"], args["padding"]
    return 2 * n * k * conv_out(h, r, stride, padding) * conv_out(w, s, stride, padding) * c * r * s


def work_matmul(args):
    (n, k), m = args["a"].shape, args["b"].shape[1]
    return 2 * n * k * m, 4 * (n * k + k * m + n * m)


def work_linear(passes):
    def work(args):
        (n, i), o = args["x"].shape, args["w"].shape[0]
        return passes * 2 * n * i * o, 4 * (n * i + o * i + n * o)

    return work


def work_arrays(args):
    """The default cost: every array argument read once and one result of the first one's size
    written (an elementwise op, a loss, an optimizer step: memory-bound, no flops counted)."""
    arrays = [value for value in args.values() if isinstance(value, np.ndarray)]
    return None, 4 * (_numel(*arrays) + _numel(arrays[0]))


def work_written(written):
    """Bytes of a memory-bound op that reads each array argument once (at its own item size: int64
    labels are 8 bytes) and writes `written(args)` float32 values: its outputs and the in-place
    arrays it writes back. A reduction writes far less than it reads."""

    def work(args):
        read = sum(value.nbytes for value in args.values() if isinstance(value, np.ndarray))
        return None, read + 4 * written(args)

    return work


def pooled_elements(args):
    """The number of outputs of a pooling op on args["x"]."""
    n, c, h, w = args["x"].shape
    return n * c * conv_out(h, args["k"], args["stride"]) * conv_out(w, args["k"], args["stride"])


def work_init(args):
    """An initializer writes its weights and reads nothing."""
    return None, 4 * int(np.prod(args["shape"]))


def work_memory(arrays_touched):
    """Bytes-only cost of a memory-bound op: float32 elements read and written."""
    return lambda args: (None, 4 * arrays_touched * _numel(next(iter(args.values()))))


def work_conv(passes):
    return lambda args: (passes * conv_flops(args), 4 * _numel(args["x"], args["w"]))


def work_conv_bias_relu_pool(args):
    """The convolution's flops; x, w and b read, and only the pooled output written."""
    n, _, h, w = args["x"].shape
    k, _, r, s = args["w"].shape
    stride, padding, pool = args["stride"], args["padding"], args["pool"]
    pooled = (conv_out(h, r, stride, padding) // pool) * (conv_out(w, s, stride, padding) // pool)
    return conv_flops(args), 4 * (_numel(args["x"], args["w"], args["b"]) + n * k * pooled)


def work_im2col(args):
    """im2col reads x once and writes its columns: [n, c * kh * kw, out_h * out_w]."""
    n, c, h, w = args["x"].shape
    kh, kw, stride, padding = args["kh"], args["kw"], args["stride"], args["padding"]
    columns = n * c * kh * kw * conv_out(h, kh, stride, padding) * conv_out(w, kw, stride, padding)
    return None, 4 * (n * c * h * w + columns)


def work_maxpool(args):
    return None, 4 * args["x"].size + 12 * pooled_elements(args)  # float32 y and int64 argmax


# --- int8 inference: int8 codes are 1 byte, scales, biases and results 4 -----------------------
def work_int8_linear(args):
    (n, k), m = args["x"].shape, args["w"].shape[0]
    return 2 * n * k * m, n * k + m * k + 8 * m + 4 * n * m


def work_int8_conv2d(args):
    n, c, h, w = args["x"].shape
    m, _, r, s = args["w"].shape
    stride, padding = args["stride"], args["padding"]
    outputs = n * m * conv_out(h, r, stride, padding) * conv_out(w, s, stride, padding)
    return 2 * outputs * c * r * s, n * c * h * w + m * c * r * s + 8 * m + 4 * outputs


def work_quantize(args):
    """quantize_int8 reads float32 x and writes one byte per element."""
    return None, 5 * args["x"].size



def work_int8_to_int8(work):
    """The work of an int8 op whose results are int8 codes: `work`'s, but a byte a result, not
    the 4 of a float32 (the results: what `work` counts beyond the inputs it reads)."""

    def counted(args):
        flops, moved = work(args)
        results = (moved - args["x"].size - args["w"].size - 8 * args["w"].shape[0]) // 4
        return flops, moved - 3 * results

    return counted


def work_maxpool_int8(args):
    """maxpool2d_int8 reads x's codes and writes one byte per window."""
    return None, args["x"].size + pooled_elements(args)


def work_attention(matmuls, written):
    """Attention's work: `matmuls` products of [N, D] by [D, M] per (batch, head) (the forward's
    q @ k^T and P @ v; the backward's five, its scores recomputed), every score counted (a kernel
    that skips the ones a causal mask hides does half the work); the arrays read once and
    `written(args)` float32 values written."""

    def work(args):
        b, h, n, d = args["q"].shape
        m = args["k"].shape[2]
        read = sum(value.nbytes for value in args.values() if isinstance(value, np.ndarray))
        return 2 * matmuls * b * h * n * m * d, read + 4 * written(args)

    return work
