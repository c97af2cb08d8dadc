"""Multi-head self-attention over tokens [N, T, D] (Vaswani et al., 2017)."""

from nn.layers.base import Layer
from nn.layers.linear import Linear
from nn.tensor import reshape, shape_of


class MultiHeadAttention(Layer):
    """tokens [N, T, D] -> [N, T, D]: queries, keys and values are three linear maps of the
    tokens, split into H heads of D/H features ([N, H, T, D/H], through swap_middle_axes); each
    head attends with the tier's `attention` op (softmax(q k^T / sqrt(D/H)) v, `causal`: a token
    sees only those before it), and the heads, joined again, go through a fourth linear map."""

    def __init__(self, dim, heads, causal=False):
        super().__init__()
        if dim % heads:
            raise ValueError(f"MultiHeadAttention: dim {dim} must divide by heads {heads}")
        self.dim, self.heads, self.causal = dim, heads, causal
        self.query, self.key, self.value, self.out = (
            Linear(dim, dim, init="xavier") for _ in range(4)
        )

    def children(self):
        return {"query": self.query, "key": self.key, "value": self.value, "out": self.out}

    def build(self, tier, in_shape, seeds):
        if len(in_shape) != 2 or in_shape[1] != self.dim:
            raise ValueError(f"{self.describe()} expects tokens (T, {self.dim}), got {in_shape}")
        self.tier = tier
        for layer in self.children().values():
            layer.output_shape = layer.build(tier, (self.dim,), seeds)
        return tuple(in_shape)

    def _split(self, rows, n, tokens):
        """[N * T, D] rows -> [N, H, T, D/H] heads."""
        by_token = reshape(self.tier, rows, (n, tokens, self.heads, self.dim // self.heads))
        return self.tier.swap_middle_axes(by_token)

    def _join(self, heads):
        """[N, H, T, D/H] heads -> [N * T, D] rows."""
        n, _, tokens, _ = shape_of(heads)
        return reshape(self.tier, self.tier.swap_middle_axes(heads), (n * tokens, self.dim))

    def forward(self, x):
        """[N, T, D] -> [N, T, D]; keeps the heads, their output and its log-sum-exps."""
        # BEGIN SOLUTION week 23, task MultiHeadAttention.forward
        n, tokens, _ = shape_of(x)
        rows = reshape(self.tier, x, (n * tokens, self.dim))
        self.q, self.k, self.v = (
            self._split(layer.forward(rows), n, tokens)
            for layer in (self.query, self.key, self.value)
        )
        self.y, self.saved = self.tier.attention(self.q, self.k, self.v, self.causal)
        return reshape(self.tier, self.out.forward(self._join(self.y)), (n, tokens, self.dim))
        # END SOLUTION

    def backward(self, dout):
        """dx [N, T, D]: the three projections' input gradients add up; fills every weight's."""
        # BEGIN SOLUTION week 23, task MultiHeadAttention.backward
        n, tokens, _ = shape_of(dout)
        dy = self._split(self.out.backward(reshape(self.tier, dout, (n * tokens, self.dim))),
                         n, tokens)  # fmt: skip
        dq, dk, dv = self.tier.attention_backward(
            dy, self.q, self.k, self.v, self.y, self.saved, self.causal
        )
        dq_rows, dk_rows, dv_rows = (
            layer.backward(self._join(grad))
            for layer, grad in ((self.query, dq), (self.key, dk), (self.value, dv))
        )
        dx = self.tier.add(self.tier.add(dq_rows, dk_rows), dv_rows)
        return reshape(self.tier, dx, (n, tokens, self.dim))
        # END SOLUTION

    def describe(self):
        mask = ", causal" if self.causal else ""
        return f"MultiHeadAttention({self.dim}, heads={self.heads}{mask})"
