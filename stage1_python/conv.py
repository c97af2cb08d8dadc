"""2-D convolution through im2col (week 5).

im2col copies every kh x kw window of the (zero-padded) image into one column, so a convolution
becomes a matmul: w as rows [K, C*R*S] times the columns [C*R*S, OH*OW]. col2im is its adjoint,
which the backward needs. Output size: OH = (H + 2*padding - kh) // stride + 1, likewise OW.
"""

from ._checks import checks, tensor_shape
from ._tensor import flatten, reshape, zeros
from .linalg import add, matmul, transpose


def im2col(x, kh, kw, stride, padding):
    """x [N, C, H, W] -> cols [N, C*kh*kw, OH*OW] (as torch.nn.functional.unfold).

    Row c*kh*kw + i*kw + j, column oh*OW + ow holds x[n][c][oh*stride - padding + i]
    [ow*stride - padding + j], or 0.0 where that falls in the padding.
    """
    x, kh, kw, stride, padding, oh, ow = checks.im2col(x, kh, kw, stride, padding)
    _, _, h, w = tensor_shape(x)
    # BEGIN SOLUTION week 5, task im2col
    cols = []
    for image in x:
        image_cols = []
        for plane in image:
            for i in range(kh):
                for j in range(kw):
                    row = []  # kernel tap (i, j) of this channel, at every output position
                    for out_y in range(oh):
                        in_y = out_y * stride - padding + i
                        for out_x in range(ow):
                            in_x = out_x * stride - padding + j
                            inside = 0 <= in_y < h and 0 <= in_x < w
                            row.append(plane[in_y][in_x] if inside else 0.0)
                    image_cols.append(row)
        cols.append(image_cols)
    return cols
    # END SOLUTION


def col2im(cols, x_shape, kh, kw, stride, padding):
    """The adjoint of im2col (as F.fold): cols [N, C*kh*kw, OH*OW] -> x [N, C, H, W].

    Every column entry is added back onto the input element it was copied from, so elements
    covered by several windows receive the sum; entries from the padding are dropped.
    """
    cols, x_shape, kh, kw, stride, padding, oh, ow = checks.col2im(
        cols, x_shape, kh, kw, stride, padding
    )
    n, c, h, w = x_shape
    # BEGIN SOLUTION week 5, task col2im
    x = zeros((n, c, h, w))
    for image_cols, image in zip(cols, x, strict=True):
        for channel, plane in enumerate(image):
            for i in range(kh):
                for j in range(kw):
                    row = image_cols[(channel * kh + i) * kw + j]
                    for out_y in range(oh):
                        in_y = out_y * stride - padding + i
                        if not 0 <= in_y < h:
                            continue
                        for out_x in range(ow):
                            in_x = out_x * stride - padding + j
                            if 0 <= in_x < w:
                                plane[in_y][in_x] += row[out_y * ow + out_x]
    return x
    # END SOLUTION


def conv2d_forward(x, w, b, stride=1, padding=0):
    """Cross-correlation, as F.conv2d: x [N, C, H, W], w [K, C, R, S], b [K] -> [N, K, OH, OW]."""
    x, w, b, stride, padding, oh, ow = checks.conv2d_forward(x, w, b, stride, padding)
    _, _, r, s = tensor_shape(w)
    # BEGIN SOLUTION week 5, task conv2d_forward
    w_rows = [flatten(kernel) for kernel in w]  # [K, C*R*S], in im2col's row order
    y = []
    for image_cols in im2col(x, r, s, stride, padding):
        out = matmul(w_rows, image_cols)  # [K, OH*OW]
        biased = [[v + b_k for v in out_row] for out_row, b_k in zip(out, b, strict=True)]
        y.append([reshape(row, (oh, ow)) for row in biased])
    return y
    # END SOLUTION


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True):
    """Gradients of conv2d_forward, dy [N, K, OH, OW] -> (dx [N, C, H, W], dw [K, C, R, S], db [K]).

    x, w, stride and padding as in the forward. need_dx=False skips dx (None in its place).
    """
    x, w, dy, stride, padding, need_dx, oh, ow = checks.conv2d_backward(
        x, w, dy, stride, padding, need_dx
    )
    (n, c, h, width), (k, _, r, s) = tensor_shape(x), tensor_shape(w)
    # BEGIN SOLUTION week 5, task conv2d_backward
    w_columns = transpose([flatten(kernel) for kernel in w])  # [C*R*S, K]
    dw_rows = zeros((k, c * r * s))
    db = zeros((k,))
    dx_cols = []
    for image_cols, image_dy in zip(im2col(x, r, s, stride, padding), dy, strict=True):
        dy_rows = [flatten(plane) for plane in image_dy]  # [K, OH*OW]
        # y_rows = w_rows @ cols + b, so the matmul gradients apply image by image.
        dw_rows = add(dw_rows, matmul(dy_rows, transpose(image_cols)))
        db = add(db, [sum(row) for row in dy_rows])
        if need_dx:
            dx_cols.append(matmul(w_columns, dy_rows))  # [C*R*S, OH*OW]
    dx = col2im(dx_cols, (n, c, h, width), r, s, stride, padding) if need_dx else None
    dw = [reshape(row, (c, r, s)) for row in dw_rows]
    return dx, dw, db
    # END SOLUTION
