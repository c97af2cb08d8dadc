"""Losses by name: how labels become targets, the loss and its gradient, predictions.

Each loss turns the model's output (logits [N, C], or [N, 1] for a binary model) and the integer
labels into a mean loss and its gradient w.r.t. the output, using the tier's fused ops.
"""

import numpy as np


class CrossEntropy:
    """Softmax cross-entropy over C classes; predictions are the highest logit."""

    name = "cross_entropy"

    def outputs_for(self, num_classes):
        return num_classes

    def targets(self, labels):
        """Integer labels [N] as the tier's loss expects them (int64 [N])."""
        return labels.astype(np.int64)

    def value_and_grad(self, tier, logits, targets):
        """(mean loss as a float, gradient w.r.t. logits): from one pass over the logits where
        the tier fuses the two (stage 4's nvcc variant: cross_entropy_loss_and_grad), else by its
        loss and the loss's backward."""
        fused = getattr(tier, "cross_entropy_loss_and_grad", None)
        if fused is not None:
            return fused(logits, targets)
        return (
            tier.cross_entropy_loss(logits, targets),
            tier.cross_entropy_loss_backward(logits, targets),
        )

    def predict(self, logits):
        """Class indices [N] from logits as a NumPy array [N, C]."""
        return logits.argmax(axis=1)

    def probabilities(self, tier, logits):
        """Class probabilities as a NumPy array [N, C]."""
        return tier.to_numpy(tier.softmax(logits))


class Hinge(CrossEntropy):
    """Multiclass hinge (SVM) loss: the perceptron's criterion with a margin of 1."""

    name = "hinge"

    def value_and_grad(self, tier, logits, targets):
        return tier.hinge_loss(logits, targets), tier.hinge_loss_backward(logits, targets)


class BinaryCrossEntropy:
    """Two classes from one logit z: p(class 1) = sigmoid(z); predictions are z > 0."""

    name = "binary_cross_entropy"

    def outputs_for(self, num_classes):
        if num_classes != 2:
            raise ValueError(f"a one-logit binary model needs 2 classes, got {num_classes}")
        return 1

    def targets(self, labels):
        """Labels 0/1 [N] as float targets [N, 1], the shape of the logits."""
        return labels.astype(np.float32).reshape(-1, 1)

    def value_and_grad(self, tier, logits, targets):
        return (
            tier.bce_with_logits_loss(logits, targets),
            tier.bce_with_logits_loss_backward(logits, targets),
        )

    def predict(self, logits):
        return (logits[:, 0] > 0).astype(np.int64)

    def probabilities(self, tier, logits):
        positive = tier.to_numpy(tier.sigmoid(logits))[:, 0].astype(np.float64)
        return np.stack([1 - positive, positive], axis=1)


LOSSES = {loss.name: loss for loss in (CrossEntropy(), Hinge(), BinaryCrossEntropy())}
