"""Convolution (csrc/conv.cu and the conv2d ladder in csrc/conv/, week 16).

im2col and col2im are the contract's ops. conv2d_forward runs one rung of the ladder
(CONV_KERNELS, csrc/conv/conv.cuh): 1 "direct" (a thread per output), 2 "im2col" (im2col into a
buffer and the SGEMM ladder's best rung), 3 "implicit_gemm" (the same product, its loads
gathering from x), 4 "winograd" (F(2x2, 3x3)), 5 "fft" (through cuFFT), 6 "winograd_4x4"
(F(4x4, 3x3)), 7 "shallow" (rung 1 again for first layers: a window in registers, the filters
in shared memory). The default "best" picks per layer the rung that measured fastest at the
curriculum's layers (BEST_RULE below, curriculum/results/conv-cuda-h100.md). Winograd applies to
3x3 kernels with stride 1 only, shallow to windows of SHALLOW_DEPTH weights or fewer (C*kh*kw);
asked for on another layer they run implicit_gemm and say nothing (a rung that refused would
make a network with one 5x5 layer unusable with kernel="winograd").

conv2d_backward computes dx, dw and db as implicit products (csrc/conv/backward.cu),
deterministically (the weight gradient's depth is split and the pieces added in order).

Rungs that need scratch memory (im2col, winograd, fft, the backward) share one device buffer,
allocated once and grown when a layer needs more: the kernels run in order on one stream.
"""

import importlib.util
from pathlib import Path

from ..runtime import device
from . import _checks
from ._checks import checks
from ._library import call, geometry
from ._scratch import scratch_for

CONV_KERNELS = ("direct", "im2col", "implicit_gemm", "winograd", "fft", "winograd_4x4", "shallow")
WINOGRAD_KERNELS = ("winograd", "winograd_4x4")
SHALLOW_DEPTH = 32  # csrc/conv/conv.cuh: the deepest window (C*kh*kw) rung 7 holds in registers
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


def winograd_applies(kh, kw, stride):
    """Whether rungs 4 and 6, F(2x2, 3x3) and F(4x4, 3x3), compute a layer of this kernel size
    and stride."""
    return kh == kw == 3 and stride == 1


def shallow_applies(channels, kh, kw):
    """Whether rung 7 computes a layer of this depth: C*kh*kw <= SHALLOW_DEPTH."""
    return channels * kh * kw <= SHALLOW_DEPTH


def kernel_that_runs(name, channels, kh, kw, stride):
    """The rung that computes a layer asked for rung `name`: implicit_gemm where a Winograd rung
    or shallow does not apply, else `name`."""
    if (name in WINOGRAD_KERNELS and not winograd_applies(kh, kw, stride)
            or name == "shallow" and not shallow_applies(channels, kh, kw)):
        return "implicit_gemm"
    return name


def winograd_block(out_height, out_width):
    """The side of the output blocks Winograd takes for these outputs (csrc/conv/conv.cuh's
    winograd_block): 4 (rung 6) where its 36 products a block come to fewer than rung 4's 16 a
    block of 2, blocks past the edge counted; else 2."""
    def blocks(side):
        return -(-out_height // side) * -(-out_width // side)

    return 4 if 36 * blocks(4) < 16 * blocks(2) else 2


def backward_takes_winograd(channels, filters, kh, kw, stride, padding):
    """Whether the backward computes dx and dw by Winograd (csrc/conv/backward.cu's
    winograd_backward): rung 4's layers, padded by 2 or less, of WINOGRAD_MIN_CHANNELS or more
    channels and filters."""
    return (winograd_applies(kh, kw, stride) and padding <= 2
            and min(channels, filters) >= WINOGRAD_MIN_CHANNELS)  # fmt: skip


def backward_winograd_blocks(x_shape, w_shape, stride, padding):
    """None when the backward computes dx and dw as products, else the blocks (dx's, dw's) of
    its Winograd: winograd_block on dx's outputs (x's pixels) and on dy's."""
    _, c, h, w = x_shape
    k, _, kh, kw = w_shape
    if not backward_takes_winograd(c, k, kh, kw, stride, padding):
        return None
    return winograd_block(h, w), winograd_block(h + 2 * padding - 2, w + 2 * padding - 2)


def best_kernel(channels, kh, kw, stride, out_height, out_width):
    """The rung "best" runs for a layer (BEST_RULE)."""
    if winograd_applies(kh, kw, stride) and channels >= WINOGRAD_MIN_CHANNELS:
        return "winograd_4x4" if winograd_block(out_height, out_width) == 4 else "winograd"
    if shallow_applies(channels, kh, kw):
        return "shallow"
    return "implicit_gemm"


# Measured on an H100 (grader.conv_bench, 2026-11-26): implicit_gemm was the fastest or tied on
# every layer but the Fashion CNN's second (2x direct on first layers at batch 256, where direct
# had been chosen); winograd beat it on that 3x3 layer of 64 channels (54 against 67 us at batch
# 64, 170 against 204 at 256) and lost on the 3x3 first layer of 1 channel (56 against 30 us),
# whose transforms cost more than the products they save. On 2026-11-27 winograd_4x4 beat
# winograd on that layer (48 against 50 us at batch 64, 130 against 162 at 256), and shallow beat
# implicit_gemm on the Fashion CNN's first layer (64 filters: 18 against 31 us at batch 64, 26
# against 46 at 256) and came within 6% of it on LeNet-5's (6 filters, too few to share each
# window's loads: 19.2 against 18.5 us at batch 64, 25.8 against 24.4 at 256; within 2% in a
# run before; the last record, 2026-11-27: 19.1 against 17.9 us at batch 64, 16.6 against 25.7
# at 256).
WINOGRAD_MIN_CHANNELS = 16
BEST_RULE = (f"winograd_4x4 or winograd (by winograd_block) for 3x3 stride-1 layers of "
             f"{WINOGRAD_MIN_CHANNELS} or more input channels, shallow for layers of "
             f"{SHALLOW_DEPTH} weights a filter or fewer, implicit_gemm otherwise")


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
    n, c, k, kh, kw = x.shape[0], x.shape[1], w.shape[0], w.shape[2], w.shape[3]
    name = kernel_that_runs(_checks.kernel_name("conv2d_forward", kernel, CONV_KERNELS,
                                                best_kernel(c, kh, kw, stride, oh, ow)),
                            c, kh, kw, stride)
    if name == "fft":
        _load_cufft()
    y = device.empty((n, k, oh, ow))
    shape = _geometry(x.shape, k, kh, kw, stride, padding, oh, ow)
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
