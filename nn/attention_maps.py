"""Where a vision transformer looks: the attention weights of its heads, and their rollout through
the blocks onto the input image (Abnar and Zuidema, "Quantifying attention flow in transformers",
ACL 2020).

After a forward pass, each MultiHeadAttention layer holds its heads' queries and keys and the
log-sum-exp of every row of scores (what the attention op saves for its backward), so the weights
P = exp(q k^T / sqrt(d) - lse) come back row by row without the op ever having stored them.
"""

import numpy as np

from nn.explain import upsampled
from nn.layers import MultiHeadAttention, PatchEmbedding


def attention_layers(model):
    """The model's MultiHeadAttention layers, in forward order."""
    found = []

    def walk(layer):
        if isinstance(layer, MultiHeadAttention):
            found.append(layer)
        for child in layer.children().values():
            walk(child)

    walk(model.net)
    return found


def attention_weights(model, images):
    """Per attention layer, its heads' weights [N, H, T, T] (float64; each row sums to 1) for the
    images [N, C, H, W] (already normalized as the model's input)."""
    tier = model.tier
    model.eval()
    model.forward(tier.from_numpy(images))
    weights = []
    for layer in attention_layers(model):
        q, k = (np.asarray(tier.to_numpy(a), dtype=np.float64) for a in (layer.q, layer.k))
        (lse,) = layer.saved
        lse = np.asarray(tier.to_numpy(lse), dtype=np.float64)
        scores = np.einsum("nhid,nhjd->nhij", q, k) / np.sqrt(q.shape[-1])
        if layer.causal:
            scores = np.where(np.tri(*scores.shape[-2:], dtype=bool), scores, -np.inf)
        weights.append(np.exp(scores - lse[..., None]))
    return weights


def rollout(weights):
    """[N, T, T]: how much each token's final representation draws on each input token, through
    every block: per layer the heads' mean plus the identity (the residual path), rows
    renormalized, multiplied in order from the first layer."""
    flow = None
    for layer in weights:
        mixed = 0.5 * layer.mean(axis=1) + 0.5 * np.eye(layer.shape[-1])
        mixed /= mixed.sum(axis=-1, keepdims=True)
        flow = mixed if flow is None else mixed @ flow
    return flow


def image_maps(model, flow):
    """[N, H, W]: the rollout averaged over the tokens (the classifier reads their mean), as a
    map over the input image, one value per patch spread bilinearly over its pixels."""
    embedding = next(layer for layer in model.net.layers if isinstance(layer, PatchEmbedding))
    rows, columns = embedding.grid
    per_patch = flow.mean(axis=1).reshape(-1, rows, columns)
    _, height, width = model.input_shape
    return upsampled(per_patch, height, width)
