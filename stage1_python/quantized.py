"""INT8 inference: quantization, int8 x int8 -> int32 products, and their rescaling to floats.

Real values x are stored as int8 codes q with a scale and a zero point: x ~ scale * (q - zero).
A layer's weights are quantized per output channel m (w ~ w_scale[m] * w_q, zero point 0), its
input per tensor (x ~ x_scale * (x_q - x_zero)); then every output is one integer sum

    acc[n, m] = sum_k (x_q[n, k] - x_zero) * w_q[m, k]      (exact in an int32)
    y[n, m] = scale[m] * acc[n, m] + b[m]                    (scale[m] = x_scale * w_scale[m])

Python's ints never overflow: this tier is the oracle for the integer sums of the others.
"""

from ._checks import checks, tensor_shape

INT8_MIN, INT8_MAX = -128, 127


def quantize_int8(x, scale, zero_point):
    """x (any shape) -> q int8 codes: clamp(round(x / scale) + zero_point, -128, 127).

    round() goes half to even (2.5 -> 2, -0.5 -> 0), as C's nearbyint and NumPy's rint; a NaN
    becomes zero_point (the code of 0.0), an infinity the end of its sign.
    """
    x, scale, zero_point = checks.quantize_int8(x, scale, zero_point)
    # BEGIN SOLUTION week 18, task quantize_int8

    def code(value):
        ratio = value / scale
        if ratio != ratio:  # NaN
            return zero_point
        ratio = min(max(ratio, -256.0), 256.0)  # beyond any code: clamped below, and round() works
        return min(max(round(ratio) + zero_point, INT8_MIN), INT8_MAX)

    def walk(node):
        return [walk(item) for item in node] if isinstance(node, list) else code(node)

    return walk(x)
    # END SOLUTION


def _rows_times_weights(rows, x_zero, w, scale, b):
    """[scale[m] * sum_k (row[k] - x_zero) * w[m][k] + b[m] for m] for each row: the int8 GEMM
    with its float rescaling, on Python ints."""
    # BEGIN SOLUTION week 18, task int8_linear
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
    # BEGIN SOLUTION week 18, task int8_conv2d
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
