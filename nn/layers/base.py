"""The layer protocol every block of a network follows (CS231n's forward/backward shape).

A layer is built once for a tier and an input shape (`build`), which allocates its parameters and
returns its output shape, so shapes are checked before any data flows. Then `forward(x)` computes
the output and keeps what `backward` needs; `backward(dout)` returns the gradient w.r.t. the input
and fills each parameter's `grad`. Shapes exclude the batch dimension: `(1, 28, 28)` for an MNIST
image, `(784,)` for a flat vector.
"""


class Layer:
    """Base class: a layer without parameters that passes shapes through unchanged."""

    def __init__(self):
        self.tier = None
        self.training = True
        self.params = {}  # {name: Parameter}, filled by `build` in layers that learn
        self.output_shape = None  # set by the container that builds this layer
        # False for a model's first layer, whose input is data: its backward may then skip the
        # input's gradient and return None (Conv2d does: that is col2im over every image).
        self.needs_input_grad = True

    def build(self, tier, in_shape, seeds):
        """Bind to `tier`, allocate parameters drawing init seeds from the iterator `seeds`.

        Returns the output shape for one example. Raises ValueError when `in_shape` does not fit.
        """
        self.tier = tier
        return tuple(in_shape)

    def forward(self, x):
        raise NotImplementedError

    def backward(self, dout):
        raise NotImplementedError

    def parameters(self):
        """{dotted name: Parameter} of this layer and of the layers inside it, in build order."""
        return self._gather(lambda layer: layer.params)

    def buffers(self):
        """{dotted name: state} saved in checkpoints but not trained (e.g. running statistics).

        Values are native arrays, or Python ints for counters.
        """
        return self._gather(lambda layer: layer.own_buffers())

    def own_buffers(self):
        """This layer's own buffers (layers with state override it)."""
        return {}

    def load_buffer(self, name, value):
        """Restore buffer `name` (a dotted name from `buffers()`) from a checkpoint."""
        child_name, _, rest = name.partition(".")
        if rest and child_name in self.children():
            self.children()[child_name].load_buffer(rest, value)
        else:
            raise KeyError(f"{type(self).__name__} has no buffer {name!r}")

    def _gather(self, own):
        """`own(self)` followed by each child's gathering, names prefixed by the child's name."""
        found = dict(own(self))
        for child_name, child in self.children().items():
            for name, value in child._gather(own).items():
                found[f"{child_name}.{name}"] = value
        return found

    def children(self):
        """{name: Layer} of the layers inside this one (containers override it)."""
        return {}

    def train(self, mode=True):
        """Switch training mode (batch statistics, dropout) on or off, here and in the children."""
        self.training = mode
        for child in self.children().values():
            child.train(mode)

    def eval(self):
        self.train(False)

    def describe(self):
        """One line for `summary()`, e.g. 'Conv2d(1->64, k=3)'."""
        return f"{type(self).__name__}()"
