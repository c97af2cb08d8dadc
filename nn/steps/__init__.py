"""Training steps: one step on one batch (forward, loss, backward, the optimizer's update), four
ways behind one interface (step.py, `Step`). The trainer picks one when it is built (`make_step`)
and calls it the same way at every step:

- host.py, `HostStep`: the batch goes from the host's arrays to the tier at every step (every
  tier; the one a learner writes in week 9).
- device.py, `DeviceStep`: the training set lives on the device (nn/device_data.py), each batch is
  gathered there, and the step's loss and correct count stay there until the trainer reads them.
- pipelined.py, `PipelinedStep`: the training set stays on the host, and each batch goes through
  pinned buffers and a copy stream while the step before it computes (nn/host_pipeline.py; the
  nvcc variant).
- recorded.py, `RecordedStep`: a device step recorded once per batch size and launched again, or
  as a CUDA graph (stage 4).
"""

from nn.device_data import device_data
from nn.host_pipeline import host_pipeline
from nn.steps.device import DeviceStep
from nn.steps.host import HostStep
from nn.steps.pipelined import PipelinedStep
from nn.steps.recorded import HOOKS as RECORDING_HOOKS
from nn.steps.recorded import RecordedStep, why_not_recorded
from nn.steps.step import NotFiniteLoss, Step

__all__ = ["DeviceStep", "HostStep", "NotFiniteLoss", "PipelinedStep", "RecordedStep", "Step",
           "make_step"]


def make_step(model, optimizer, data, recipe, recorded=True, graph=False, echo=print,
              communicator=None):
    """The Step that trains `model` (built on its tier) with `optimizer` on `data` by `recipe`.

    On a tier with the device-data hooks the training set goes to the device; on a tier that
    records steps, a device step is recorded unless `recorded` is False, or the recipe is one a
    recording cannot follow (said through `echo`). `graph` (the nvcc variant) captures each
    recording as a CUDA graph: ValueError where steps cannot be recorded. With a `communicator`
    (nn/distributed/), the step is this rank's part of a data-parallel step, recorded as a
    device step is (its NCCL calls in the recording), never captured as a graph.
    """
    tier = model.tier
    on_device = device_data(tier, data, model.loss, recipe)
    if communicator is not None:
        if graph:
            raise ValueError("--graph: a data-parallel step is recorded, not captured as a CUDA "
                             "graph (NCCL's calls in it)")  # fmt: skip
        # Steps themselves: imported when asked.
        from nn.distributed.recorded import RecordedDataParallelStep
        from nn.distributed.step import DataParallelStep

        step = DataParallelStep(model, optimizer, data, recipe, communicator, on_device)
        why_not = why_not_recorded(tier, model, recipe, on_device)
        if recorded and why_not:
            echo(f"training op by op: {why_not}")
        return RecordedDataParallelStep(step) if recorded and not why_not else step
    why_not = why_not_recorded(tier, model, recipe, on_device, graph)
    if graph and why_not:
        raise ValueError(f"--graph: steps cannot be recorded here: {why_not}")
    if recorded and why_not and all(hasattr(tier, hook) for hook in RECORDING_HOOKS):
        echo(f"training op by op: {why_not}")
    if on_device is None:
        pipeline = host_pipeline(tier, data, model.loss, recipe)
        if pipeline is not None:
            return PipelinedStep(model, optimizer, pipeline)
        return HostStep(model, optimizer, data, recipe)
    step = DeviceStep(model, optimizer, on_device)
    return RecordedStep(step, graph) if recorded and not why_not else step
