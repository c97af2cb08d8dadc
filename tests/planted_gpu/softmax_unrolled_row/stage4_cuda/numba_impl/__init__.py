"""Planted bug: softmax gives each row one block of 128 threads that cover 8 columns each,
unrolled, with no loop past them: right for rows of up to 1024 classes (every size the speed
ladder times), columns past 1024 never written and left out of the row's sum."""

import math

from numba import cuda, float32

from stage4_cuda.runtime.device import empty
from stage4_cuda.runtime.launch import launch
from tests.planted_gpu.reference import *  # noqa: F403

THREADS, UNROLL = 128, 8


@cuda.jit
def _softmax_rows(x, y):
    partial = cuda.shared.array(THREADS, float32)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    top = float32(-math.inf)
    for k in range(UNROLL):
        j = t + k * THREADS
        if j < x.shape[1]:
            top = max(top, x[row, j])
    partial[t] = top
    cuda.syncthreads()
    top = partial[0]
    for k in range(1, THREADS):
        top = max(top, partial[k])
    cuda.syncthreads()
    total = float32(0)
    for k in range(UNROLL):
        j = t + k * THREADS
        if j < x.shape[1]:
            total += math.exp(x[row, j] - top)
    partial[t] = total
    cuda.syncthreads()
    total = float32(0)
    for k in range(THREADS):
        total += partial[k]
    for k in range(UNROLL):
        j = t + k * THREADS
        if j < x.shape[1]:
            y[row, j] = math.exp(x[row, j] - top) / total


def softmax(x, kernel="best"):
    y = empty(x.shape)
    launch(_softmax_rows, x.shape[0], THREADS, x, y)
    return y
