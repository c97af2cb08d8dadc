"""PyTorch modules for the nn layers that torch.nn has no one-module counterpart of: what
bench.epoch.to_torch builds a model's PyTorch twin from. Imported only where PyTorch is."""

import torch
import torch.nn.functional as F


class Residual(torch.nn.Module):
    """body(x) + x, or body(x) + shortcut(x): nn.layers.Residual."""

    def __init__(self, body, shortcut=None):
        super().__init__()
        self.body, self.shortcut = body, shortcut

    def forward(self, x):
        return self.body(x) + (x if self.shortcut is None else self.shortcut(x))


class PatchEmbedding(torch.nn.Module):
    """Images [N, C, H, W] -> tokens [N, T, D] by a strided convolution: nn's PatchEmbedding."""

    def __init__(self, conv):
        super().__init__()
        self.conv = conv

    def forward(self, x):
        return self.conv(x).flatten(2).transpose(1, 2)


class PositionEmbedding(torch.nn.Module):
    """Tokens [N, T, D] + a learned table [T, D]."""

    def __init__(self, shape):
        super().__init__()
        self.table = torch.nn.Parameter(torch.zeros(shape))

    def forward(self, x):
        return x + self.table


class MeanOverTokens(torch.nn.Module):
    """Tokens [N, T, D] -> their mean [N, D]."""

    def forward(self, x):
        return x.mean(dim=1)


class MultiHeadAttention(torch.nn.Module):
    """nn's MultiHeadAttention: four linear maps around F.scaled_dot_product_attention."""

    def __init__(self, query, key, value, out, heads, causal):
        super().__init__()
        self.query, self.key, self.value, self.out = query, key, value, out
        self.heads, self.causal = heads, causal

    def forward(self, x):
        n, tokens, dim = x.shape

        def split(layer):
            return layer(x).view(n, tokens, self.heads, dim // self.heads).transpose(1, 2)

        y = F.scaled_dot_product_attention(
            split(self.query), split(self.key), split(self.value), is_causal=self.causal
        )
        return self.out(y.transpose(1, 2).reshape(n, tokens, dim))
