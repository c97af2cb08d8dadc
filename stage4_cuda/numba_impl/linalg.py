"""Linear algebra (weeks 14 and 15): matmul through the ladder of matmul_ladder.py, transpose, the
elementwise add, mul and scale, and column sums (sum_rows) with a reduction ladder.

add, mul and scale are per-element functions made into kernels by elementwise.py (`zip_kernel`,
`map_kernel`), over arrays seen flat (`flat`).
"""

from numba import cuda, float32

from ..runtime import device
from ..runtime.checks import checks, kernel_name
from ..runtime.device import flat, scratch
from ..runtime.launch import BLOCK, blocks_for, launch
from . import matmul_ladder as ladder
from .elementwise import launch_map, map_kernel, zip_kernel
from .reduce import ROW_THREADS, block_sum

# The matmul ladder, slowest first; `matmul(a, b, kernel=...)` takes a name or its number 1..7.
MATMUL_KERNELS = tuple(ladder.LADDER)
BEST_MATMUL = "register_2d_vector"  # the fastest on an H100: results/matmul-numba-h100.json
# The column-sum ladder: one thread per column, or a block of threads per column with a tree.
SUM_ROWS_KERNELS = ("naive", "tree")


def gemm(a, b, c, kernel=BEST_MATMUL):
    """c = a @ b on checked device arrays (a [N, K], b [K, M], c [N, M]): the ops' matmul."""
    function, geometry = ladder.LADDER[kernel]
    blocks, threads = geometry(*c.shape)
    launch(function, blocks, threads, a, b, c)
    return c


def matmul(a, b, kernel="best"):
    """a [N, K] @ b [K, M] -> [N, M], by kernel `kernel` of the ladder (MATMUL_KERNELS)."""
    a, b = checks.matmul(a, b)
    name = kernel_name("matmul", kernel, MATMUL_KERNELS, BEST_MATMUL)
    return gemm(a, b, device.empty((a.shape[0], b.shape[1])), name)


TRANSPOSE_TILE = 32
TRANSPOSE_ROW = TRANSPOSE_TILE + 1  # a shared array's shape must be constants, not expressions


@cuda.jit
def _transpose(a, out):
    # A block copies a 32 x 32 tile through shared memory: it reads rows of `a` and writes rows of
    # `out`, both coalesced (a direct out[j, i] = a[i, j] would scatter one of the two). The +1
    # column shifts each row by one bank, so reading a column of the tile has no bank conflicts.
    # BEGIN SOLUTION week 14, task transpose
    tile = cuda.shared.array((TRANSPOSE_TILE, TRANSPOSE_ROW), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n, m = a.shape
    i0, j0 = cuda.blockIdx.y * TRANSPOSE_TILE, cuda.blockIdx.x * TRANSPOSE_TILE
    for dy in range(0, TRANSPOSE_TILE, cuda.blockDim.y):
        if i0 + ty + dy < n and j0 + tx < m:
            tile[ty + dy, tx] = a[i0 + ty + dy, j0 + tx]
    cuda.syncthreads()
    for dy in range(0, TRANSPOSE_TILE, cuda.blockDim.y):
        if j0 + ty + dy < m and i0 + tx < n:
            out[j0 + ty + dy, i0 + tx] = tile[tx, ty + dy]
    # END SOLUTION


def transpose_into(a, out):
    """out [M, N] = a [N, M] transposed, on checked device arrays."""
    n, m = a.shape
    blocks = (blocks_for(m, TRANSPOSE_TILE), blocks_for(n, TRANSPOSE_TILE))
    launch(_transpose, blocks, (TRANSPOSE_TILE, 8), a, out)
    return out


def transposed(a):
    """A scratch copy of a checked [N, M] device array, transposed: [M, N]."""
    return transpose_into(a, scratch(tuple(a.shape)[::-1]))


def transpose(a):
    """a [N, M] -> [M, N]."""
    a = checks.transpose(a)
    return transpose_into(a, device.empty(tuple(a.shape)[::-1]))


@cuda.jit
def _swap_middle_axes(x, out):
    # A thread per output element out[i, k, j, e] = x[i, j, k, e]: neighbouring threads write
    # neighbouring floats, and read them too within a row of D. 8 bytes and no FLOPs an element.
    # BEGIN SOLUTION week 22, task swap_middle_axes
    a, c, b, d = out.shape
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for o in range(start, a * c * b * d, stride):
        e, rest = o % d, o // d
        j, rest = rest % b, rest // b
        k, i = rest % c, rest // c
        out[i, k, j, e] = x[i, j, k, e]
    # END SOLUTION


def swap_middle_axes(x):
    """x [A, B, C, D] -> [A, C, B, D]."""
    x = checks.swap_middle_axes(x)
    a, b, c, d = x.shape
    out = device.empty((a, c, b, d))
    launch(_swap_middle_axes, blocks_for(out.size, BLOCK), BLOCK, x, out)
    return out


@cuda.jit(device=True)
def add_element(a, b, _):
    # BEGIN SOLUTION week 14, task add
    return a + b
    # END SOLUTION


@cuda.jit(device=True)
def mul_element(a, b, _):
    # BEGIN SOLUTION week 14, task mul
    return a * b
    # END SOLUTION


@cuda.jit(device=True)
def scale_element(a, s):
    # BEGIN SOLUTION week 14, task scale
    return s * a
    # END SOLUTION


# b has a's size or is one row: the zip kernel repeats a row along a (elementwise.py)
_add = zip_kernel(add_element)
_mul = zip_kernel(mul_element)
_scale = map_kernel(scale_element)


def add_into(a, b, out):
    """out = a + b (b a's shape or one row), on checked device arrays."""
    launch_map(_add, a.size, flat(a), flat(b), flat(out))
    return out


def add(a, b):
    """a + b: b has a's shape, or is 1-D of length a.shape[-1] (added to every row)."""
    a, b = checks.add(a, b)
    return add_into(a, b, device.empty(a.shape))


def mul(a, b):
    """a * b elementwise, with add's broadcasting."""
    a, b = checks.mul(a, b)
    out = device.empty(a.shape)
    launch_map(_mul, a.size, flat(a), flat(b), flat(out))
    return out


def scale(a, s):
    """s * a for a float s; a any shape."""
    a, s = checks.scale(a, s)
    out = device.empty(a.shape)
    launch_map(_scale, a.size, flat(a), flat(out), scalar=s)
    return out


# --- column sums: the reduction ladder's first op ---------------------------------------------


@cuda.jit
def _sum_rows_naive(x, out):
    # One thread per column walks down it. Neighbouring threads read neighbouring columns
    # (coalesced), but there are only M threads: a bias gradient (M = 10, N = 4096) keeps ten
    # threads busy on a GPU that runs a hundred thousand, each doing N dependent additions.
    # BEGIN SOLUTION week 14, task sum_rows
    j = cuda.grid(1)
    if j < out.size:
        total = float32(0)
        for i in range(x.shape[0]):
            total += x[i, j]
        out[j] = total
    # END SOLUTION


@cuda.jit
def _sum_rows_tree(x, out):
    # One block per column: ROW_THREADS threads each add every ROW_THREADS-th row, then a tree in
    # shared memory adds their partial sums. N/ROW_THREADS + log2(ROW_THREADS) dependent steps
    # instead of N, and M blocks to spread over the GPU.
    # BEGIN SOLUTION week 14, task sum_rows
    cache = cuda.shared.array(ROW_THREADS, float32)
    j, t = cuda.blockIdx.x, cuda.threadIdx.x
    partial = float32(0)
    for i in range(t, x.shape[0], ROW_THREADS):
        partial += x[i, j]
    total = block_sum(cache, partial)
    if t == 0:
        out[j] = total
    # END SOLUTION


def sum_rows(x, kernel="best"):
    """x [N, M] -> [M]: the sum over the rows (column sums), e.g. a bias gradient.

    `kernel`: "naive" (a thread per column) or "tree" (a block per column), see SUM_ROWS_KERNELS.
    """
    x = checks.sum_rows(x)
    name = kernel_name("sum_rows", kernel, SUM_ROWS_KERNELS, "tree")
    return sum_rows_into(x, device.empty((x.shape[1],)), name)


def sum_rows_into(x, out, kernel="tree"):
    """out [M] = the column sums of a checked x [N, M]."""
    if kernel == "naive":
        launch(_sum_rows_naive, blocks_for(x.shape[1]), BLOCK, x, out)
    else:
        launch(_sum_rows_tree, x.shape[1], ROW_THREADS, x, out)
    return out


