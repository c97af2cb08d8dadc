"""What turns an image into a sequence of tokens and back into one vector: the pieces a vision
transformer adds around its blocks. Tokens are [N, T, D]: T tokens of D features per example."""

from nn.layers.base import Layer
from nn.layers.conv import Conv2d
from nn.parameter import Parameter
from nn.tensor import full, reshape, shape_of


class PatchEmbedding(Layer):
    """An image [N, C, H, W] -> tokens [N, T, D]: the image cut into P x P patches, T = (H/P)(W/P)
    of them in row-major order, each projected to D features by the same linear map. That map is
    a convolution with a P x P kernel and stride P, whose output [N, D, H/P, W/P] is then read
    token by token (swap_middle_axes puts D last)."""

    def __init__(self, in_channels, dim, patch):
        super().__init__()
        self.dim = dim
        self.patch = patch
        self.conv = Conv2d(in_channels, dim, patch, stride=patch, init="xavier")

    def children(self):
        return {"conv": self.conv}

    def build(self, tier, in_shape, seeds):
        _, height, width = tuple(in_shape)
        if height % self.patch or width % self.patch:
            raise ValueError(
                f"{self.describe()} needs images whose sides divide by {self.patch}, got "
                f"{tuple(in_shape)}"
            )
        self.tier = tier
        # as a model's first layer its input is data: the projection then skips the images'
        # gradient (a col2im over every image, the costliest kernel of a training step)
        self.conv.needs_input_grad = self.needs_input_grad
        _, rows, columns = self.conv.output_shape = self.conv.build(tier, in_shape, seeds)
        self.grid = (rows, columns)
        return (rows * columns, self.dim)

    def forward(self, x):
        """tokens [N, T, D] from images [N, C, H, W]."""
        # BEGIN SOLUTION week 23, task PatchEmbedding.forward
        maps = self.conv.forward(x)  # [N, D, H/P, W/P]
        n, tokens = shape_of(maps)[0], self.grid[0] * self.grid[1]
        columns = reshape(self.tier, maps, (n, self.dim, tokens, 1))
        return reshape(self.tier, self.tier.swap_middle_axes(columns), (n, tokens, self.dim))
        # END SOLUTION

    def backward(self, dout):
        """The images' gradient [N, C, H, W] from the tokens' [N, T, D] (None when
        needs_input_grad is False); fills the projection's."""
        # BEGIN SOLUTION week 23, task PatchEmbedding.backward
        n, tokens, _ = shape_of(dout)
        rows = reshape(self.tier, dout, (n, tokens, self.dim, 1))
        maps = reshape(self.tier, self.tier.swap_middle_axes(rows), (n, self.dim, *self.grid))
        return self.conv.backward(maps)
        # END SOLUTION

    def describe(self):
        return f"PatchEmbedding({self.patch}x{self.patch} -> {self.dim})"


class PositionEmbedding(Layer):
    """tokens [N, T, D] + a learned table [T, D]: token t gets row t, so that attention, which
    treats its inputs as a set, can tell where each patch came from. Drawn small (std ~0.02)."""

    def __init__(self, scale=0.02):
        super().__init__()
        self.scale = scale

    def build(self, tier, in_shape, seeds):
        self.tier = tier
        self.shape = tuple(in_shape)
        tokens, dim = self.shape
        # he_normal's std is sqrt(2 / D); rescaled to `scale`
        drawn = tier.he_normal(self.shape, next(seeds))
        self.params = {"table": Parameter(tier.scale(drawn, self.scale * (dim / 2) ** 0.5),
                                          decay=False)}  # fmt: skip
        return self.shape

    def forward(self, x):
        # BEGIN SOLUTION week 23, task PositionEmbedding.forward
        n, size = shape_of(x)[0], self.shape[0] * self.shape[1]
        table = reshape(self.tier, self.params["table"].value, (size,))
        flat = self.tier.add(reshape(self.tier, x, (n, size)), table)  # the table on every row
        return reshape(self.tier, flat, (n, *self.shape))
        # END SOLUTION

    def backward(self, dout):
        # BEGIN SOLUTION week 23, task PositionEmbedding.backward
        n, size = shape_of(dout)[0], self.shape[0] * self.shape[1]
        table_grad = self.tier.sum_rows(reshape(self.tier, dout, (n, size)))  # summed over N
        self.params["table"].grad = reshape(self.tier, table_grad, self.shape)
        return dout
        # END SOLUTION

    def describe(self):
        return "PositionEmbedding()"


class Tokenwise(Layer):
    """The same layer applied to every token: tokens [N, T, D] are seen as [N * T, D] rows, so a
    Linear (which takes [rows, features]) maps each token on its own."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def children(self):
        return {"layer": self.layer}

    def build(self, tier, in_shape, seeds):
        self.tier = tier
        tokens, dim = tuple(in_shape)
        (out,) = self.layer.output_shape = self.layer.build(tier, (dim,), seeds)
        return (tokens, out)

    def forward(self, x):
        n, tokens, dim = shape_of(x)
        y = self.layer.forward(reshape(self.tier, x, (n * tokens, dim)))
        return reshape(self.tier, y, (n, tokens, shape_of(y)[1]))

    def backward(self, dout):
        n, tokens, out = shape_of(dout)
        dx = self.layer.backward(reshape(self.tier, dout, (n * tokens, out)))
        return reshape(self.tier, dx, (n, tokens, shape_of(dx)[1]))

    def describe(self):
        return f"Tokenwise({self.layer.describe()})"


class MeanOverTokens(Layer):
    """tokens [N, T, D] -> [N, D], their mean: one vector per example for the classifier. The sum
    over T is a matrix product with a column of 1/T (the tokens' axis put last first), and its
    backward the product with a row of 1/T, spreading each gradient evenly over the T tokens."""

    def build(self, tier, in_shape, seeds):
        self.tier = tier
        self.tokens, self.dim = tuple(in_shape)
        self.average = full(tier, (self.tokens, 1), 1.0 / self.tokens)
        self.spread = full(tier, (1, self.tokens), 1.0 / self.tokens)
        return (self.dim,)

    def forward(self, x):
        # BEGIN SOLUTION week 23, task MeanOverTokens.forward
        n = shape_of(x)[0]
        by_token = reshape(self.tier, x, (n, self.tokens, self.dim, 1))
        by_feature = self.tier.swap_middle_axes(by_token)
        rows = reshape(self.tier, by_feature, (n * self.dim, self.tokens))  # a row per feature
        return reshape(self.tier, self.tier.matmul(rows, self.average), (n, self.dim))
        # END SOLUTION

    def backward(self, dout):
        # BEGIN SOLUTION week 23, task MeanOverTokens.backward
        n = shape_of(dout)[0]
        rows = self.tier.matmul(reshape(self.tier, dout, (n * self.dim, 1)), self.spread)
        by_feature = reshape(self.tier, rows, (n, self.dim, self.tokens, 1))
        by_token = self.tier.swap_middle_axes(by_feature)
        return reshape(self.tier, by_token, (n, self.tokens, self.dim))
        # END SOLUTION

    def describe(self):
        return "MeanOverTokens()"
