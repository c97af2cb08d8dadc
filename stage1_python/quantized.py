"""INT8 inference: quantization, int8 x int8 -> int32 products, and their rescaling to floats.

Real values x are stored as int8 codes q with a scale and a zero point: x ~ scale * (q - zero).
A layer's weights are quantized per output channel m (w ~ w_scale[m] * w_q, zero point 0), its
input per tensor (x ~ x_scale * (x_q - x_zero)); then every output is one integer sum

    acc[n, m] = sum_k (x_q[n, k] - x_zero) * w_q[m, k]      (exact in an int32)
    y[n, m] = scale[m] * acc[n, m] + b[m]                    (scale[m] = x_scale * w_scale[m])

Between two layers the float y need not exist: the _to_int8 forms write the next layer's input
codes straight from the sums (scale and b divided by the next input's scale), a ReLU is a clamp
at the zero point, and max-pooling works on the codes themselves (maxpool2d_int8).

Python's ints never overflow: this tier is the oracle for the integer sums of the others.
"""

from ._checks import checks, tensor_shape

INT8_MIN, INT8_MAX = -128, 127


def _code(ratio, zero_point, low=INT8_MIN):
    """The int8 code of a value over its scale: rounded half to even, plus zero_point, clamped to
    [low, 127]; a NaN is zero_point."""
    # BEGIN SOLUTION week 19, task quantize_int8
    if ratio != ratio:  # NaN
        return max(zero_point, low)
    ratio = min(max(ratio, -256.0), 256.0)  # beyond any code: clamped below, and round() works
    return min(max(round(ratio) + zero_point, low), INT8_MAX)
    # END SOLUTION


def _codes(node, code):
    """`code` applied to every float of a nested list."""
    return [_codes(item, code) for item in node] if isinstance(node, list) else code(node)


def quantize_int8(x, scale, zero_point):
    """x (any shape) -> q int8 codes: clamp(round(x / scale) + zero_point, -128, 127).

    round() goes half to even (2.5 -> 2, -0.5 -> 0), as C's nearbyint and NumPy's rint; a NaN
    becomes zero_point (the code of 0.0), an infinity the end of its sign.
    """
    x, scale, zero_point = checks.quantize_int8(x, scale, zero_point)
    return _codes(x, lambda value: _code(value / scale, zero_point))


def _rows_times_weights(rows, x_zero, w, scale, b):
    """[scale[m] * sum_k (row[k] - x_zero) * w[m][k] + b[m] for m] for each row: the int8 GEMM
    with its float rescaling, on Python ints."""
    # BEGIN SOLUTION week 19, task int8_linear
    out = []
    for row in rows:
        centred = [value - x_zero for value in row]
        out.append([
            scale[m] * sum(a * q for a, q in zip(centred, w_row, strict=True)) + b[m]
            for m, w_row in enumerate(w)
        ])  # fmt: skip
    return out
    # END SOLUTION


def int8_linear(x, x_zero, w, scale, b):
    """y [N, M] = scale[m] * sum_k (x[n, k] - x_zero) * w[m, k] + b[m].

    x [N, K] and w [M, K] hold int8 codes, scale [M] and b [M] floats.
    """
    x, x_zero, w, scale, b = checks.int8_linear(x, x_zero, w, scale, b)
    return _rows_times_weights(x, x_zero, w, scale, b)


def int8_conv2d(x, x_zero, w, scale, b, stride=1, padding=0):
    """y [N, M, OH, OW]: the convolution of int8 x [N, C, H, W] with int8 w [M, C, R, S],
    each output scale[m] * (its int32 sum) + b[m].

    Every receptive field becomes one row of C*R*S codes (im2col, the rows and columns swapped
    so that a row is contiguous, as a dot product wants it) and the int8 GEMM does the rest.
    The padding holds x_zero, the code of a real 0.0, not the code 0.
    """
    x, x_zero, w, scale, b, stride, padding, oh, ow = checks.int8_conv2d(
        x, x_zero, w, scale, b, stride, padding
    )
    _, _, h, width = tensor_shape(x)
    _, _, r, s = tensor_shape(w)
    # BEGIN SOLUTION week 19, task int8_conv2d
    w_rows = [[q for plane in filt for line in plane for q in line] for filt in w]
    out = []
    for image in x:
        fields = []
        for out_y in range(oh):
            for out_x in range(ow):
                field = []
                for plane in image:
                    for i in range(r):
                        in_y = out_y * stride - padding + i
                        for j in range(s):
                            in_x = out_x * stride - padding + j
                            inside = 0 <= in_y < h and 0 <= in_x < width
                            field.append(plane[in_y][in_x] if inside else x_zero)
                fields.append(field)
        y = _rows_times_weights(fields, x_zero, w_rows, scale, b)  # [OH*OW, M]
        out.append([[[y[a * ow + c][m] for c in range(ow)] for a in range(oh)]
                    for m in range(len(w))])  # fmt: skip
    return out
    # END SOLUTION


def _requantized(y, y_zero, relu):
    """The int8 codes of floats y under scale 1 and zero point y_zero, none below y_zero (the
    code of 0.0) with relu."""
    # BEGIN SOLUTION week 19, task int8_linear_to_int8
    low = y_zero if relu else INT8_MIN
    return _codes(y, lambda value: _code(value, y_zero, low))
    # END SOLUTION


def int8_linear_to_int8(x, x_zero, w, scale, b, y_zero, relu=False):
    """q [N, M]: the int8 codes of int8_linear's y under scale 1 and zero point y_zero, with relu
    none below y_zero. scale and b are the layer's divided by its output's scale, so q holds the
    next layer's input codes: the float32 y never exists."""
    x, x_zero, w, scale, b, y_zero, relu = checks.int8_linear_to_int8(
        x, x_zero, w, scale, b, y_zero, relu
    )
    return _requantized(_rows_times_weights(x, x_zero, w, scale, b), y_zero, relu)


def int8_conv2d_to_int8(x, x_zero, w, scale, b, y_zero, stride=1, padding=0, relu=False):
    """q [N, M, OH, OW]: int8_conv2d's y requantized as int8_linear_to_int8's."""
    x, x_zero, w, scale, b, y_zero, stride, padding, relu, _, _ = checks.int8_conv2d_to_int8(
        x, x_zero, w, scale, b, y_zero, stride, padding, relu
    )
    return _requantized(int8_conv2d(x, x_zero, w, scale, b, stride, padding), y_zero, relu)


def maxpool2d_int8(x, k, stride):
    """q [N, C, OH, OW]: the largest code of each k x k window of int8 codes x [N, C, H, W].

    A code's order is its value's (x = scale * (q - zero), scale > 0): the largest code is the
    code of the largest value, so pooling needs no float. No argmax: inference only.
    """
    x, k, stride, oh, ow = checks.maxpool2d_int8(x, k, stride)
    # BEGIN SOLUTION week 19, task maxpool2d_int8
    return [[[[max(plane[oy * stride + i][ox * stride + j] for i in range(k) for j in range(k))
               for ox in range(ow)] for oy in range(oh)] for plane in image]
            for image in x]  # fmt: skip
    # END SOLUTION
