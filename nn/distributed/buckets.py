"""Gradients all-reduced in buckets while backward still runs (Li et al., "PyTorch Distributed",
VLDB 2020, section 3.2: the overlap of DistributedDataParallel).

The layers that hold parameters are grouped, last layer first (the order backward finishes them),
into buckets of about `bucket_bytes` of gradients. Each such layer's backward is wrapped: once it
returns, its gradients are final, and once every layer of a bucket has returned, the bucket's
gradients go to the communicator's `all_reduce`, which sums them on a stream of its own while
backward goes on through the earlier layers. `finish()` makes the optimizer's step wait for the
last sums. Every rank runs the same backward, so every rank launches the same buckets in the same
order, as NCCL requires.
"""

import numpy as np

BUCKET_BYTES = 4 << 20  # small enough that the first bucket's sum starts early in backward


def layers_with_parameters(layer):
    """`layer` and every layer inside it that holds parameters of its own, in build order."""
    found = [layer] if layer.params else []
    for child in layer.children().values():
        found += layers_with_parameters(child)
    return found


def gradient_bytes(layer):
    return sum(int(np.prod(p.value.shape)) * 4 for p in layer.params.values())


class GradientBuckets:
    """The buckets of `model`'s layers, all-reduced through `communicator` as backward ends each."""

    def __init__(self, model, communicator, bucket_bytes=BUCKET_BYTES):
        self.communicator = communicator
        self.buckets, current, size = [], [], 0
        for layer in reversed(layers_with_parameters(model.net)):
            current.append(layer)
            size += gradient_bytes(layer)
            if size >= bucket_bytes:
                self.buckets.append(current)
                current, size = [], 0
        if current:
            self.buckets.append(current)
        self.bucket_of = {id(layer): number for number, bucket in enumerate(self.buckets)
                          for layer in bucket}  # fmt: skip
        for bucket in self.buckets:
            for layer in bucket:
                layer.backward = self._hooked(layer, layer.backward)
        self.waiting = None  # per bucket, how many of its layers have not finished backward
        self.launched = []  # the buckets all-reduced in this step, in order

    def _hooked(self, layer, backward):
        """`backward`, then the news that `layer`'s gradients are final."""

        def backward_then_ready(dout):
            dx = backward(dout)
            self.ready(layer)
            return dx

        return backward_then_ready

    def start(self):
        """Before a step's backward: every bucket waits for all its layers."""
        self.waiting = [len(bucket) for bucket in self.buckets]
        self.launched = []

    def ready(self, layer):
        """`layer`'s gradients are final: all-reduce its bucket if it was the bucket's last."""
        if self.waiting is None:
            return  # a backward outside a data-parallel step (none is reduced)
        number = self.bucket_of[id(layer)]
        self.waiting[number] -= 1
        if self.waiting[number] == 0:
            self.communicator.all_reduce(self.gradients(number))
            self.launched.append(number)

    def gradients(self, number):
        """The gradient arrays of bucket `number`."""
        return [p.grad for layer in self.buckets[number] for p in layer.params.values()]

    def zeros(self, tier):
        """A rank without examples in this batch: zero gradients, all-reduced as backward would."""
        self.start()
        for bucket in self.buckets:
            for layer in bucket:
                for parameter in layer.params.values():
                    parameter.grad = tier.from_numpy(np.zeros(parameter.value.shape, np.float32))
                self.ready(layer)

    def finish(self):
        """After backward: the optimizer's step waits for every bucket's sum."""
        missing = [number for number, left in enumerate(self.waiting) if left]
        self.waiting = None
        if missing:  # a rank that skipped a layer would leave the others waiting for its sums
            raise RuntimeError(f"data parallel: backward did not reach the layers of bucket(s) "
                               f"{missing}; their gradients were not all-reduced")  # fmt: skip
        self.communicator.wait()
