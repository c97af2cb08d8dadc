"""Convolution (csrc/conv/: im2col.cu and the conv2d ladder, week 16).

im2col and col2im are the contract's ops. conv2d_forward runs one rung of the ladder
(CONV_KERNELS, csrc/conv/conv.cuh): 1 "direct" (a thread per output), 2 "im2col" (im2col into a
buffer and the SGEMM ladder's best rung), 3 "implicit_gemm" (the same product, its loads
gathering from x), 4 "winograd" (F(2x2, 3x3)), 5 "fft" (through cuFFT), 6 "winograd_4x4"
(F(4x4, 3x3)), 7 "shallow" (rung 1 again for first layers: a window in registers, the filters
in shared memory). Which rung runs is the library's choice, made in csrc/conv/dispatch.cu alone
(`kernel_that_runs` asks it): "best" picks per layer the rung that measured fastest at the
curriculum's layers (`best_rule()`, curriculum/results/conv-cuda-h100.md). Winograd applies to
3x3 kernels with stride 1 only, shallow to shallow windows (C*kh*kw); asked for on another layer
they run implicit_gemm and say nothing (a rung that refused would make a network with one 5x5
layer unusable with kernel="winograd").

conv2d_backward computes dw and db (csrc/conv/backward_dw.cu), then dx (backward_dx.cu), each
the way its layer suits, deterministically (sums in a fixed order, no atomics).

Rungs that need scratch memory (im2col, winograd, fft, the backward) share one device buffer,
allocated once and grown when a layer needs more: the kernels run in order on one stream.
"""

import importlib.util
from pathlib import Path

from ..runtime import device
from . import _checks
from ._checks import checks
from ._library import call, check_status, ffi, geometry, library
from ._scratch import scratch_for

CONV_KERNELS = ("direct", "im2col", "implicit_gemm", "winograd", "fft", "winograd_4x4", "shallow")
BACKWARD_SCRATCH = 0  # the rung number s2c_cuda_conv2d_scratch takes for the backward


def _geometry(x_shape, filters, kh, kw, stride, padding, oh, ow):
    """The library's convolution geometry."""
    n, c, h, w = x_shape
    return geometry("conv", n=n, channels=c, height=h, width=w, filters=filters, kh=kh, kw=kw,
                    stride=stride, padding=padding, out_height=oh, out_width=ow)


def im2col(x, kh, kw, stride, padding):
    """x [N, C, H, W] -> cols [N, C*kh*kw, OH*OW] (torch.nn.functional.unfold)."""
    x, kh, kw, stride, padding, oh, ow = checks.im2col(x, kh, kw, stride, padding)
    n, c = x.shape[0], x.shape[1]
    cols = device.empty((n, c * kh * kw, oh * ow))
    call("s2c_cuda_im2col", x, cols, _geometry(x.shape, 0, kh, kw, stride, padding, oh, ow), False)
    return cols


def col2im(cols, x_shape, kh, kw, stride, padding):
    """cols [N, C*kh*kw, OH*OW] summed back into x_shape [N, C, H, W] (torch's fold)."""
    cols, x_shape, kh, kw, stride, padding, oh, ow = checks.col2im(
        cols, x_shape, kh, kw, stride, padding)
    x = device.empty(x_shape)
    call("s2c_cuda_col2im", cols, x, _geometry(x_shape, 0, kh, kw, stride, padding, oh, ow),
         False)
    return x


def _rung(shape, kernel):
    """The name of the rung that computes the layer of geometry `shape` when `kernel` ("best", a
    name of CONV_KERNELS or its number) is asked for: the library decides (csrc/conv/dispatch.cu).
    Asked directly, not through `call`: a choice made on the host has no place in a recorded
    step."""
    name = _checks.kernel_name("conv2d_forward", kernel, CONV_KERNELS, None)
    asked = 0 if name is None else CONV_KERNELS.index(name) + 1
    rung = ffi.new("int *")
    check_status("s2c_cuda_conv2d_rung", library().s2c_cuda_conv2d_rung(shape, asked, rung))
    return CONV_KERNELS[rung[0] - 1]


def _layer(x_shape, w_shape, stride, padding):
    """The library's geometry of a layer of these shapes."""
    (_, _, h, w), (k, _, kh, kw) = x_shape, w_shape
    oh, ow = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    return _geometry(x_shape, k, kh, kw, stride, padding, oh, ow)


def kernel_that_runs(kernel, x_shape, w_shape, stride, padding):
    """The rung that computes a layer of these shapes when `kernel` is asked for: "best"'s choice,
    implicit_gemm where a Winograd rung or shallow does not apply, else `kernel` itself."""
    return _rung(_layer(x_shape, w_shape, stride, padding), kernel)


def backward_winograd_blocks(x_shape, w_shape, stride, padding):
    """None when the backward computes dx and dw without Winograd, else the blocks (dx's, dw's)
    of its Winograd, 2 or 4 (csrc/conv/dispatch.cu decides)."""
    dx_block, dw_block = ffi.new("int *"), ffi.new("int *")
    shape = _layer(x_shape, w_shape, stride, padding)
    status = library().s2c_cuda_conv2d_backward_blocks(shape, dx_block, dw_block)
    check_status("s2c_cuda_conv2d_backward_blocks", status)
    return (dx_block[0], dw_block[0]) if dx_block[0] else None


def best_rule():
    """What "best" runs, in words, with the library's thresholds (for the bench's record)."""
    lib = library()
    return (f"winograd_4x4 or winograd (by winograd_block) for 3x3 stride-1 layers of "
            f"{lib.S2C_CUDA_WINOGRAD_MIN_CHANNELS} or more input channels, shallow for layers of "
            f"{lib.S2C_CUDA_SHALLOW_DEPTH} weights a filter or fewer, implicit_gemm otherwise")


def _cufft_path():
    """libcufft from pip's nvidia-cufft package, when it is installed (no linker looks there),
    else None: the library then tries cuFFT's usual names."""
    try:
        spec = importlib.util.find_spec("nvidia.cufft")
    except ImportError:
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder, "lib").glob("libcufft.so*"))
        if found:
            return str(found[0]).encode()
    return None


_cufft_loaded = False


def _load_cufft():
    """Load cuFFT into the library once, for rung 5; a RuntimeError saying it is missing."""
    global _cufft_loaded
    if not _cufft_loaded:
        call("s2c_cuda_load_cufft", _cufft_path())
        _cufft_loaded = True


def conv2d_forward(x, w, b, stride=1, padding=0, kernel="best"):
    """x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH, OW] (cross-correlation), by rung
    `kernel` of the ladder: "best", a name of CONV_KERNELS or its number 1..7."""
    x, w, b, stride, padding, oh, ow = checks.conv2d_forward(x, w, b, stride, padding)
    n, k, kh, kw = x.shape[0], w.shape[0], w.shape[2], w.shape[3]
    shape = _geometry(x.shape, k, kh, kw, stride, padding, oh, ow)
    name = _rung(shape, kernel)
    if name == "fft":
        _load_cufft()
    y = device.empty((n, k, oh, ow))
    scratch = scratch_for("s2c_cuda_conv2d_scratch", shape, CONV_KERNELS.index(name) + 1)
    call(f"s2c_cuda_conv2d_{name}", x, w, b, y, scratch, shape)
    return y


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True):
    """-> (dx [N, C, H, W] or None without need_dx, dw [K, C, R, S], db [K]).

    dx is the product of w read transposed and dy gathered under each input pixel; dw and db one
    product over the whole batch of dy and x's receptive fields (and a column of ones for db).
    """
    x, w, dy, stride, padding, need_dx, oh, ow = checks.conv2d_backward(
        x, w, dy, stride, padding, need_dx)
    k = w.shape[0]
    dx = device.empty(x.shape) if need_dx else None
    dw, db = device.empty(w.shape), device.empty((k,))
    shape = _geometry(x.shape, k, w.shape[2], w.shape[3], stride, padding, oh, ow)
    scratch = scratch_for("s2c_cuda_conv2d_scratch", shape, BACKWARD_SCRATCH)
    call("s2c_cuda_conv2d_backward", x, w, dy, dx, dw, db, scratch, shape)
    return dx, dw, db
