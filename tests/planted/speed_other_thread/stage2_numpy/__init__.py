"""Planted gamer: relu hands its work to another thread, written as a Python loop (about 1000x
too slow), and waits for it: the calling thread's own CPU time is next to nothing, the
process's is the loop's."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tests.planted.reference import *  # noqa: F403

_pool = ThreadPoolExecutor(max_workers=1)


def _relu_loop(x):
    flat = [0.0 if v <= 0 else v for v in x.reshape(-1).tolist()]  # NaN stays: NaN <= 0 is False
    return np.array(flat, dtype=np.float32).reshape(x.shape)


def relu(x):
    return _pool.submit(_relu_loop, x).result()
