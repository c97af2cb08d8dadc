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
- the backward: dx sums K*R*S products per pixel, dw and db N*OH*OW (split into pieces whose
  sums are added: the same count of roundings at most): (D + 2) u times the same sums of
  magnitudes.

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


def backward_bound(x, w, dy, stride, padding):
    """The largest errors of dx, dw and db (the backward's one implementation)."""
    import torch.nn.grad as G

    k, c, kh, kw = w.shape
    n, _, oh, ow = dy.shape
    dx = G.conv2d_input(x.shape, w.abs(), dy.abs(), stride, padding)
    dw = G.conv2d_weight(x.abs(), w.shape, dy.abs(), stride, padding)
    db = dy.abs().sum(dim=(0, 2, 3))
    return ((k * kh * kw + 2) * U * dx, (n * oh * ow + 2) * U * dw, (n * oh * ow + 2) * U * db)
