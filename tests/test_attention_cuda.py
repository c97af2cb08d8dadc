"""The attention ladder in CUDA C (stage4_cuda/csrc/attention/), checked without a GPU.

Every rung's forward, and the backward, run on the CPU emulation of CUDA (tests/cuda_emulation/:
a block's threads are fibers, __syncthreads a barrier, a warp's shuffles another) through ctypes,
against float64 NumPy, at odd shapes: n and m past a tile of 64 and not a multiple of it, n
unlike m, d below, at and past 64 (the tiles' two column groups), causal and not, and with a NaN
or an infinity in an input, whose pattern must be PyTorch's math backend's (masked scores are
S + -inf). Speed needs a GPU: `python -m bench.attention_ladder`.
"""

import ctypes
import math
import shutil

import numpy as np
import pytest
from attention_reference import close, reference
from cuda_emulated import build_library

from stage4_cuda.nvcc_impl.attention import ATTENTION_KERNELS, scratch_floats
from tools.exercises import REPO_ROOT

CSRC = REPO_ROOT / "stage4_cuda" / "csrc"
LADDER = CSRC / "attention"
EMULATION = REPO_ROOT / "tests" / "cuda_emulation"
SOURCES = [*(f"attention/{p.name}" for p in sorted(LADDER.glob("*.cu"))), "errors.cu"]
V, I64 = ctypes.c_void_p, ctypes.c_int64
FORWARD = [V] * 6 + [I64] * 4 + [ctypes.c_int, ctypes.c_float]
BACKWARD = [V] * 10 + [I64] * 4 + [ctypes.c_int, ctypes.c_float]
# (heads, n, m, d): a tile and a bit, fewer keys than queries, more, one query, d past 64, and
# two heads of two blocks of 128 queries (rung 5's), whose causal blocks run longest first
SHAPES = [(2, 70, 70, 64), (1, 37, 130, 33), (1, 131, 5, 16), (1, 1, 9, 7), (1, 66, 67, 100),
          (2, 150, 140, 64)]  # fmt: skip


def test_the_ladder_has_numbered_rungs_each_saying_what_it_costs():
    rungs = sorted(LADDER.glob("0*.cu"))
    assert [p.stem for p in rungs] == [f"{i:02d}_{n}" for i, n in enumerate(ATTENTION_KERNELS, 1)]
    for number, path in enumerate(rungs, 1):
        text = path.read_text()
        assert text.startswith(f"/* {path.name} -- rung {number}: ")
        assert "What it changes" in text or "What it does" in text
        assert "Cost model" in text and "bytes" in text and "FLOPs" in text
        assert f"python -m bench.attention_ladder --rungs {path.stem[3:]} */" in text


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed here")
    loaded = ctypes.CDLL(str(build_library(tmp_path_factory.mktemp("attention"), CSRC,
                                           EMULATION, SOURCES)))  # fmt: skip
    for name in ATTENTION_KERNELS:
        getattr(loaded, f"s2c_cuda_attention_{name}").argtypes = FORWARD
    loaded.s2c_cuda_attention_backward.argtypes = BACKWARD
    return loaded


def pointer(a):
    return a.ctypes.data_as(V)


def run(lib, name, q, k, v, causal, scale):
    heads, n, d = q.shape
    m = k.shape[1]
    y, lse = np.full((heads, n, d), np.nan, np.float32), np.full((heads, n), np.nan, np.float32)
    scratch = np.full(max(1, scratch_floats(name, heads, n, m)), np.nan, np.float32)
    status = getattr(lib, f"s2c_cuda_attention_{name}")(
        *map(pointer, (q, k, v, y, lse, scratch)), heads, n, m, d, causal, scale
    )
    assert status == 0
    return y, lse


def run_backward(lib, dy, q, k, v, y, lse, causal, scale):
    heads, n, d = q.shape
    m = k.shape[1]
    grads = [np.full(a.shape, np.nan, np.float32) for a in (q, k, v)]
    scratch = np.full(scratch_floats("backward", heads, n, m), np.nan, np.float32)
    status = lib.s2c_cuda_attention_backward(
        *map(pointer, (dy, q, k, v, y, lse, *grads, scratch)), heads, n, m, d, causal, scale
    )
    assert status == 0
    return grads


def inputs(rng, heads, n, m, d):
    q = rng.standard_normal((heads, n, d), dtype=np.float32)
    k, v = (rng.standard_normal((heads, m, d), dtype=np.float32) for _ in range(2))
    return q, k, v, rng.standard_normal((heads, n, d), dtype=np.float32)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_rung_and_the_backward_against_float64(lib, shape, causal):
    rng = np.random.default_rng(sum(shape) + causal)
    q, k, v, dy = inputs(rng, *shape)
    scale = 1.3 / math.sqrt(shape[-1])
    y64, lse64, *grads64 = reference(q, k, v, dy, causal, scale)
    for name in ATTENTION_KERNELS:
        y, lse = run(lib, name, q, k, v, causal, scale)
        close(y, y64, f"{name} y")
        close(lse, lse64, f"{name} lse")
    y, lse = run(lib, "flash2", q, k, v, causal, scale)
    for got, want, what in zip(run_backward(lib, dy, q, k, v, y, lse, causal, scale), grads64,
                               ("dq", "dk", "dv"), strict=True):  # fmt: skip
        close(got, want, what)


# where, what: a NaN in each input; an infinity in a key or a value every query masks (+inf:
# NaN - inf; -inf: -inf - inf = -inf, no NaN; in v, 0 x inf); a row whose one score is -inf
POISONS = [("q", np.nan), ("k", np.nan), ("v", np.nan), ("dy", np.nan), ("k", np.inf),
           ("k", -np.inf), ("v", -np.inf), ("score", -np.inf)]  # fmt: skip


@pytest.mark.parametrize(("where", "poison"), POISONS, ids=[f"{w}-{p}" for w, p in POISONS])
def test_a_non_finite_input_spreads_as_in_pytorch(lib, where, poison):
    """A causal mask hides keys past a query, but PyTorch adds -inf to the scores there (NaN for
    a NaN or +inf score) and multiplies v and dy by their zero weights (NaN for an infinity):
    the flash rungs and the backward must not skip those tiles then."""
    rng = np.random.default_rng(3)
    q, k, v, dy = inputs(rng, 1, 70, 130, 20)
    arrays = {"q": q, "k": k, "v": v, "dy": dy}
    # query 5 of q and dy; key 129 of k and v, which every query (n = 70) masks: its tile of keys
    # (128, 129) is one a causal rung skips when every input is finite
    # "score": query 0's one key scores poison, its only unmasked score
    if where == "score":
        q[0, 0], k[0, 0] = 0, 0
        q[0, 0, 3], k[0, 0, 3] = poison, 1
    else:
        arrays[where][0, 129 if where in "kv" else 5, 3] = poison
    scale = 0.25
    y64, lse64, *grads64 = reference(q, k, v, dy, True, scale)
    for name in ATTENTION_KERNELS:
        y, lse = run(lib, name, q, k, v, True, scale)
        close(y, y64, f"{name} y")
        close(lse, lse64, f"{name} lse")
    with np.errstate(all="ignore"):
        y, lse = y64.astype(np.float32), lse64.astype(np.float32)
    for got, want, what in zip(run_backward(lib, dy, q, k, v, y, lse, True, scale), grads64,
                               ("dq", "dk", "dv"), strict=True):  # fmt: skip
        close(got, want, what)
