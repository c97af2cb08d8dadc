"""How far each rung of the conv2d ladder may be from the exact result: bounds on float32's
rounding error, for the tests (tests/test_stage4_nvcc.py) and the benchmark (bench/conv_ladder.py).

With u = 2^-24 (float32's unit roundoff), a sum of D products computed in any order is within
(D + 1) u of the sum of the products' magnitudes (Higham, Accuracy and Stability of Numerical
Algorithms, 2nd ed., eq. 3.5). Per rung, for y[n, k, oh, ow]:

- direct, im2col, implicit_gemm: D = C*R*S products and the bias:
      (D + 2) u (|x| * |w| + |b|)       (* the correlation itself)
- winograd, F(2x2, 3x3): each transformed input entry adds 4 pixels (|V| <= 4 max|x|), each
  transformed filter entry is at most 9/4 of the filter's largest weight, each output adds 9 of
  the 16 products with signs; the rounding steps are 2 (input transform) + 3 (filter) + C (the
  product over the channels) + 4 (output transform):
      81 (C + 9) u max|x[n]| sum over c of max|w[k, c]| + u |b|
- fft: a radix-2 FFT of F points is normwise within 5 u log2 F of the exact transform (Higham,
  section 24.1); three transforms, two spectral roundings and C channel terms, in the norms the
  correlation preserves (||x_c * w_c||_2 <= ||x_c||_2 ||w_c||_1), bound the largest error by
      u (15 log2(F_h F_w) + C + 4) sum over c of ||x[n, c]||_2 ||w[k, c]||_1 + u |b|
  with F_h <= 2 (H + 2 padding) (cuFFT's size is the next product of 2, 3, 5, 7).
- winograd_4x4, F(4x4, 3x3) (csrc/conv/06_winograd_4x4.cu): each term of an output (a pixel
  times a weight times entries of the matrices) rounds at most 2 x 3 times in the input
  transform B^T d B (a row of B^T: 5 d rounds, then two additions; or four exact products, three
  additions), 2 x 4 in the filter's G g G^T (a row of G: 1/6 or 1/24 rounds to float32, the
  product, two additions; the kernel's division by 6 or 24 after its two additions, once), C in
  the product over the channels, 2 x 4 in the output's A^T M A (a row of A^T adds five terms) and
  once in the bias. With the same algorithm on magnitudes (winograd_4x4_forward; * elementwise):
      (C + 23) u |A^T| (sum over c of (|G| |g| |G^T|) * (|B^T| |d| |B|)) |A| + u |b|
  for the filters g = w[k, c] and x's 6x6 patches d. Each count is the larger of the kernel's
  (which may contract a * b + c into one rounding) and the reference's matrix products here.
- the backward by products: dx sums K*R*S products per pixel, dw and db N*OH*OW (split into
  pieces whose sums are added: the same count of roundings at most): (D + 2) u times the same
  sums of magnitudes.
- the backward by Winograd (3x3 stride-1 layers of 16 or more channels and filters), in blocks of
  2x2 or 4x4 outputs: dx is rung 4's or rung 6's forward of dy through the turned filters, with
  its bound. dw is F(3x3, 2x2) or F(3x3, 4x4) over the T blocks of dy: each entry of
  M = sum over blocks of E * V rounds at most T times, then the output transform; E (dy's block e
  transformed) and V (x's patch d under it, B^T d B) round before. The error is within
  (T + steps) u of the same algorithm on magnitudes (winograd_weight_gradient), such as
      |A'^T| (sum over blocks of (|G'| |e| |G'^T|) * (|B^T| |d| |B|)) |A'|
  - F(3x3, 2x2), E = G' e G'^T, dw = A'^T M A': E and V 2 steps each, the output transform 4,
    T + 9; the bound takes (T + 12) u. db is 4 x the sum over the blocks of E[5], a quarter of
    each block's sum: (T + 3) u sum |dy|.
  - F(3x3, 4x4), E = A e A^T, dw = G^T M G: E 2 x 3 (a row of A adds four exact products), V 6,
    the output transform 2 x 6 (a row of G^T: a rounded 1/6 or 1/24, the product, up to four
    additions; the kernel's 4): (T + 24) u. db is the sum over the blocks of E[7], e's sum as
    (e0 + e2) + (e1 + e3) on the columns, then the row: 4 steps, and T - 1 over the blocks:
    (T + 3) u sum |dy|.

These are worst-case bounds, so a correct rung never fails them whatever the order of its sums,
while an indexing mistake (a wrong tap, channel or image) is off by the size of a product, far
above them. Arrays are torch float64 tensors (on any device).
"""

import math

U = 2.0**-24


def forward_bound(kernel, x, w, b, stride, padding):
    """The largest error rung `kernel` may make on each output [N, K, OH, OW]."""
    import torch.nn.functional as F

    c = x.shape[1]
    bias = U * b.abs()[None, :, None, None]
    if kernel == "winograd":
        image_max = x.abs().amax(dim=(1, 2, 3))  # [N]
        filter_sum = w.abs().amax(dim=(2, 3)).sum(dim=1)  # [K]
        bound = 81 * (c + 9) * U * image_max[:, None] * filter_sum[None, :]
        return bound[:, :, None, None] + bias
    if kernel == "winograd_4x4":
        if stride != 1 or tuple(w.shape[2:]) != (3, 3):
            raise ValueError("F(4x4, 3x3) computes 3x3 stride-1 layers only")
        magnitudes = winograd_4x4_forward(x, w, None, padding, magnitudes=True)
        return (c + 23) * U * magnitudes + bias
    if kernel == "fft":
        fh, fw = 2 * (x.shape[2] + 2 * padding), 2 * (x.shape[3] + 2 * padding)
        terms = 15 * math.log2(fh * fw) + c + 4
        x_norms = x.pow(2).sum(dim=(2, 3)).sqrt()  # [N, C]
        w_norms = w.abs().sum(dim=(2, 3))  # [K, C]
        return (U * terms * (x_norms @ w_norms.T))[:, :, None, None] + bias
    depth = c * w.shape[2] * w.shape[3]
    magnitudes = F.conv2d(x.abs(), w.abs(), None, stride, padding)
    return (depth + 2) * U * magnitudes + (depth + 2) * bias


def backward_bound(x, w, dy, stride, padding, winograd=None):
    """The largest errors of dx, dw and db: by products when `winograd` is None, else by Winograd
    in blocks (dx_block, dw_block), each 2 (F(2x2, 3x3) and F(3x3, 2x2)) or 4 (F(4x4, 3x3) and
    F(3x3, 4x4)): the blocks the backward takes for the layer (nvcc_impl.conv)."""
    import torch.nn.grad as G

    k, c, kh, kw = w.shape
    n, _, oh, ow = dy.shape
    db = dy.abs().sum(dim=(0, 2, 3))
    if winograd:
        dx_block, dw_block = winograd
        turned = w.transpose(0, 1).flip((2, 3))  # [C, K, 3, 3]: dx is dy through these
        rung = {2: "winograd", 4: "winograd_4x4"}[dx_block]
        dx = forward_bound(rung, dy, turned, x.new_zeros(c), 1, kh - 1 - padding)
        blocks = n * -(-oh // dw_block) * -(-ow // dw_block)
        steps = {2: 12, 4: 24}[dw_block]
        sums = winograd_weight_gradient(x, dy, padding, magnitudes=True, block=dw_block)
        return dx.expand(x.shape), (blocks + steps) * U * sums, (blocks + 3) * U * db
    dx = G.conv2d_input(x.shape, w.abs(), dy.abs(), stride, padding)
    dw = G.conv2d_weight(x.abs(), w.shape, dy.abs(), stride, padding)
    return ((k * kh * kw + 2) * U * dx, (n * oh * ow + 2) * U * dw, (n * oh * ow + 2) * U * db)


# Winograd's F(3x3, 2x2) of the weight gradient (csrc/conv/backward_dw.cu): rung 4's B^T, and G',
# A'^T.
WINOGRAD_B_T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
WINOGRAD_G = [[1, 0], [0.5, 0.5], [0.5, -0.5], [0, 1]]
WINOGRAD_A_T = [[1, 1, 1, 0], [0, 1, -1, 0], [0, 1, 1, -1]]

# Rung 6's F(4x4, 3x3) (csrc/conv/06_winograd_4x4.cu): y = A^T [(G g G^T) * (B^T d B)] A; its
# weight gradient F(3x3, 4x4) is dw = G^T [sum over blocks of (A e A^T) * (B^T d B)] G.
WINOGRAD_4X4_B_T = [
    [4, 0, -5, 0, 1, 0],
    [0, -4, -4, 1, 1, 0],
    [0, 4, -4, -1, 1, 0],
    [0, -2, -1, 2, 1, 0],
    [0, 2, -1, -2, 1, 0],
    [0, 4, 0, -5, 0, 1],
]
WINOGRAD_4X4_G = [
    [1 / 4, 0, 0],
    [-1 / 6, -1 / 6, -1 / 6],
    [-1 / 6, 1 / 6, -1 / 6],
    [1 / 24, 1 / 12, 1 / 6],
    [1 / 24, -1 / 12, 1 / 6],
    [0, 0, 1],
]
WINOGRAD_4X4_A_T = [
    [1, 1, 1, 1, 1, 0],
    [0, 1, -1, 2, -2, 0],
    [0, 1, 1, 4, 4, 0],
    [0, 1, -1, 8, -8, 1],
]


def _matrices(like, magnitudes, *matrices):
    """The matrices as tensors of `like`'s dtype and device (their magnitudes with `magnitudes`)."""
    return [like.new_tensor(m).abs() if magnitudes else like.new_tensor(m) for m in matrices]


def _patches(x, padding, block, high, wide):
    """x's patches [N, C, high, wide, block + 2, block + 2] under `block` x `block` blocks of a
    3x3 correlation's outputs: patch (th, tw) covers rows block th - padding .. block th - padding
    + block + 1 (zero outside the image), likewise columns."""
    import torch.nn.functional as F

    h, w, side = x.shape[2], x.shape[3], block + 2
    bottom = max(0, block * high + 2 - padding - h)
    right = max(0, block * wide + 2 - padding - w)
    patches = F.pad(x, (padding, right, padding, bottom)).unfold(2, side, block)
    return patches.unfold(3, side, block)[:, :, :high, :wide]


def _blocks(y, block):
    """y [N, K, OH, OW] as its blocks [N, K, ceil(OH/block), ceil(OW/block), block, block], zero
    past its edge."""
    import torch.nn.functional as F

    high, wide = -(-y.shape[2] // block), -(-y.shape[3] // block)
    padded = F.pad(y, (0, block * wide - y.shape[3], 0, block * high - y.shape[2]))
    return padded.unfold(2, block, block).unfold(3, block, block)


def winograd_4x4_forward(x, w, b, padding, magnitudes=False):
    """y [N, K, OH, OW] = the 3x3 stride-1 correlation of x with w plus b (None: no bias) by
    F(4x4, 3x3), in x's dtype: A^T (sum over c of (G g G^T) * (B^T d B)) A for each 4x4 block (the
    outputs past y's edge dropped), in torch's order of the sums. With `magnitudes`, the same on
    |x|, |w|, |b| and the matrices' magnitudes: the sums that bound its rounding error."""
    import torch

    b_t, g, a_t = _matrices(x, magnitudes, WINOGRAD_4X4_B_T, WINOGRAD_4X4_G, WINOGRAD_4X4_A_T)
    if magnitudes:
        x, w = x.abs(), w.abs()
    n, k = x.shape[0], w.shape[0]
    oh, ow = x.shape[2] + 2 * padding - 2, x.shape[3] + 2 * padding - 2
    high, wide = -(-oh // 4), -(-ow // 4)
    v = b_t @ _patches(x, padding, 4, high, wide) @ b_t.T  # [N, C, th, tw, 6, 6]
    u = g @ w @ g.T  # [K, C, 6, 6]
    m = torch.einsum("kcij,ncyzij->nkyzij", u, v)
    y = (a_t @ m @ a_t.T).transpose(3, 4).reshape(n, k, 4 * high, 4 * wide)[:, :, :oh, :ow]
    if b is None:
        return y
    return y + (b.abs() if magnitudes else b)[None, :, None, None]


def winograd_weight_gradient(x, dy, padding, magnitudes=False, block=2):
    """dw [K, C, 3, 3] by F(3x3, 2x2) (block 2) or F(3x3, 4x4) (block 4), in x's dtype:
    A'^T (sum over blocks of (G' e G'^T) * (B^T d B)) A', or G^T (sum over blocks of
    (A e A^T) * (B^T d B)) G, for dy's blocks e (zero past its edge) and x's patches d under them
    (in torch's order of the sums). With `magnitudes`, the same on |x|, |dy| and the matrices'
    magnitudes: the sums that bound its rounding error."""
    import torch

    if block == 2:
        b_t, ge, out = _matrices(x, magnitudes, WINOGRAD_B_T, WINOGRAD_G, WINOGRAD_A_T)
    else:
        b_t, g, a_t = _matrices(x, magnitudes, WINOGRAD_4X4_B_T, WINOGRAD_4X4_G, WINOGRAD_4X4_A_T)
        ge, out = a_t.T, g.T
    if magnitudes:
        x, dy = x.abs(), dy.abs()
    blocks = _blocks(dy, block)
    e = ge @ blocks @ ge.T  # [N, K, th, tw, side, side]
    v = b_t @ _patches(x, padding, block, *blocks.shape[2:4]) @ b_t.T  # [N, C, th, tw, ...]
    return out @ torch.einsum("nkyzij,ncyzij->kcij", e, v) @ out.T
