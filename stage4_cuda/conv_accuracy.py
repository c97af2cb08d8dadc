"""How far each rung of the conv2d ladder may be from the exact result: bounds on float32's
rounding error, for the tests (tests/test_stage4_nvcc.py) and the benchmark (grader/conv_bench.py).

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
- the backward by products: dx sums K*R*S products per pixel, dw and db N*OH*OW (split into
  pieces whose sums are added: the same count of roundings at most): (D + 2) u times the same
  sums of magnitudes.
- the backward by Winograd (3x3 stride-1 layers of 16 or more channels and filters): dx is rung
  4's forward of dy through the turned filters, with its bound. dw is F(3x3, 2x2) over the T
  blocks of 2x2 outputs: each entry of M = sum over blocks of E V rounds at most T times, E
  (dy's block through G') and V (x's patch through B) twice each, the product once, and the
  output transform A'^T M A' four times, so the error is within (T + 9) u of
      |A'^T| (sum over blocks of (|G'| |e| |G'^T|) * (|B^T| |d| |B|)) |A'|
  (the same algorithm on magnitudes, computed here; * elementwise); the bound takes (T + 12) u.
  db is 4 x the sum over the blocks of E[5], a quarter of each block's sum: (T + 3) u sum |dy|.

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
    if kernel == "fft":
        fh, fw = 2 * (x.shape[2] + 2 * padding), 2 * (x.shape[3] + 2 * padding)
        terms = 15 * math.log2(fh * fw) + c + 4
        x_norms = x.pow(2).sum(dim=(2, 3)).sqrt()  # [N, C]
        w_norms = w.abs().sum(dim=(2, 3))  # [K, C]
        return (U * terms * (x_norms @ w_norms.T))[:, :, None, None] + bias
    depth = c * w.shape[2] * w.shape[3]
    magnitudes = F.conv2d(x.abs(), w.abs(), None, stride, padding)
    return (depth + 2) * U * magnitudes + (depth + 2) * bias


def backward_bound(x, w, dy, stride, padding, winograd=False):
    """The largest errors of dx, dw and db: by products, or by Winograd when `winograd` (the
    backward takes it for the layer: nvcc_impl.conv.backward_takes_winograd)."""
    import torch.nn.grad as G

    k, c, kh, kw = w.shape
    n, _, oh, ow = dy.shape
    db = dy.abs().sum(dim=(0, 2, 3))
    if winograd:
        turned = w.transpose(0, 1).flip((2, 3))  # [C, K, 3, 3]: dx is dy through these
        dx = forward_bound("winograd", dy, turned, x.new_zeros(c), 1, kh - 1 - padding)
        blocks = n * -(-oh // 2) * -(-ow // 2)
        dw = (blocks + 12) * U * winograd_weight_gradient(x, dy, padding, magnitudes=True)
        return dx.expand(x.shape), dw, (blocks + 3) * U * db
    dx = G.conv2d_input(x.shape, w.abs(), dy.abs(), stride, padding)
    dw = G.conv2d_weight(x.abs(), w.shape, dy.abs(), stride, padding)
    return ((k * kh * kw + 2) * U * dx, (n * oh * ow + 2) * U * dw, (n * oh * ow + 2) * U * db)


# Winograd's F(3x3, 2x2) of the weight gradient (csrc/conv/backward.cu): rung 4's B^T, and G', A'^T.
WINOGRAD_B_T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
WINOGRAD_G = [[1, 0], [0.5, 0.5], [0.5, -0.5], [0, 1]]
WINOGRAD_A_T = [[1, 1, 1, 0], [0, 1, -1, 0], [0, 1, 1, -1]]


def winograd_weight_gradient(x, dy, padding, magnitudes=False):
    """dw [K, C, 3, 3] by F(3x3, 2x2), in x's dtype: A'^T (sum over blocks of (G' e G'^T) *
    (B^T d B)) A' for dy's 2x2 blocks e (zero past its edge) and x's 4x4 patches d under them (in
    torch's order of the sums). With `magnitudes`, the same on |x|, |dy| and the matrices'
    magnitudes: the sums that bound its rounding error."""
    import torch
    import torch.nn.functional as F

    b_t, g, a_t = (x.new_tensor(m).abs() if magnitudes else x.new_tensor(m)
                   for m in (WINOGRAD_B_T, WINOGRAD_G, WINOGRAD_A_T))  # fmt: skip
    if magnitudes:
        x, dy = x.abs(), dy.abs()
    h, w = x.shape[2:]
    high, wide = -(-dy.shape[2] // 2), -(-dy.shape[3] // 2)
    # patch (th, tw) covers rows 2 th - padding .. 2 th - padding + 3, likewise columns
    bottom, right = max(0, 2 * high + 2 - padding - h), max(0, 2 * wide + 2 - padding - w)
    patches = F.pad(x, (padding, right, padding, bottom)).unfold(2, 4, 2).unfold(3, 4, 2)
    blocks = F.pad(dy, (0, 2 * wide - dy.shape[3], 0, 2 * high - dy.shape[2]))
    e = g @ blocks.unfold(2, 2, 2).unfold(3, 2, 2) @ g.T  # [N, K, th, tw, 4, 4]
    v = b_t @ patches[:, :, :high, :wide] @ b_t.T  # [N, C, th, tw, 4, 4]
    return a_t @ torch.einsum("nkyzij,ncyzij->kcij", e, v) @ a_t.T
