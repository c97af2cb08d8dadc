"""Optimizers: each step updates every parameter in place through the tier's step op.

State (velocities, moment estimates) lives in native arrays of the same shape as each parameter,
created at zero; `state()` and `load_state()` let checkpoints save and restore it. The learning
rate is passed to every `step`, so a schedule can change it.
"""

from nn.tensor import full, shape_of


class Optimizer:
    """Base: `params` is {name: Parameter}; `slots` names the state arrays kept per parameter."""

    slots = ()

    def __init__(self, tier, params, weight_decay=0.0):
        self.tier = tier
        self.params = params
        self.weight_decay = weight_decay
        self.steps = 0
        self.slot_arrays = {
            (name, slot): full(tier, shape_of(param.value), 0.0)
            for name, param in params.items()
            for slot in self.slots
        }

    def step(self, lr):
        """Apply one update with learning rate `lr` to every parameter that has a gradient."""
        self.count_step()
        # BEGIN SOLUTION week 9, task Optimizer.step
        for name, param in self.params.items():
            if param.grad is None:
                raise RuntimeError(f"parameter {name!r} has no gradient: run backward first")
            decay = self.weight_decay if param.decay else 0.0
            state = [self.slot_arrays[name, slot] for slot in self.slots]
            self.update(param, state, lr, decay)
        # END SOLUTION

    def count_step(self):
        """One more update taken: by `step`, or by a recorded step's launch, which replays the
        kernels of a `step` (nn/steps/recorded.py). Adam's bias corrections count from it."""
        self.steps += 1

    def update(self, param, state, lr, weight_decay):
        raise NotImplementedError

    def state(self):
        """{'parameter name/slot': native array}, for a checkpoint (which saves `steps` too)."""
        return {f"{name}/{slot}": value for (name, slot), value in self.slot_arrays.items()}

    def load_state(self, arrays, steps):
        """Restore what `state()` returned (same keys, shapes checked by the caller)."""
        for name, slot in self.slot_arrays:
            self.slot_arrays[name, slot] = arrays[f"{name}/{slot}"]
        self.steps = steps


class SGD(Optimizer):
    """p -= lr * g."""

    def update(self, param, state, lr, weight_decay):
        self.tier.sgd_step(param.value, param.grad, lr, weight_decay)


class Momentum(Optimizer):
    """Heavy-ball momentum (v = momentum * v + g), or Nesterov's look-ahead variant."""

    slots = ("velocity",)

    def __init__(self, tier, params, weight_decay=0.0, momentum=0.9, nesterov=False):
        super().__init__(tier, params, weight_decay)
        self.momentum = momentum
        self.nesterov = nesterov

    def update(self, param, state, lr, weight_decay):
        (velocity,) = state
        self.tier.momentum_step(
            param.value, param.grad, velocity, lr, self.momentum, self.nesterov, weight_decay
        )


class RMSprop(Optimizer):
    """Divide the step by a running root-mean-square of recent gradients."""

    slots = ("square_avg",)

    def __init__(self, tier, params, weight_decay=0.0, alpha=0.99, eps=1e-8):
        super().__init__(tier, params, weight_decay)
        self.alpha = alpha
        self.eps = eps

    def update(self, param, state, lr, weight_decay):
        (square_avg,) = state
        self.tier.rmsprop_step(
            param.value, param.grad, square_avg, lr, self.alpha, self.eps, weight_decay
        )


class Adam(Optimizer):
    """Momentum and RMSprop together, with bias correction of both running averages."""

    slots = ("exp_avg", "exp_avg_sq")

    def __init__(self, tier, params, weight_decay=0.0, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__(tier, params, weight_decay)
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps

    def update(self, param, state, lr, weight_decay):
        exp_avg, exp_avg_sq = state
        self.tier.adam_step(
            param.value, param.grad, exp_avg, exp_avg_sq, self.steps, lr,
            self.beta1, self.beta2, self.eps, weight_decay,
        )


OPTIMIZERS = {"sgd": SGD, "momentum": Momentum, "rmsprop": RMSprop, "adam": Adam}


def make_optimizer(name, tier, params, weight_decay=0.0, **options):
    """Optimizer `name` ('sgd', 'momentum', 'nesterov', 'rmsprop', 'adam') over `params`."""
    if name == "nesterov":
        return Momentum(tier, params, weight_decay, nesterov=True, **options)
    if name not in OPTIMIZERS:
        raise ValueError(
            f"optimizer must be one of {sorted([*OPTIMIZERS, 'nesterov'])}, got {name!r}"
        )
    return OPTIMIZERS[name](tier, params, weight_decay, **options)
