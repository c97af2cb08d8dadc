"""Data-parallel training over the GPUs of one machine (week 23): `python -m nn.train ... --gpus N`.

- launch.py: the command starts one process per GPU (each sees one GPU), watches them, and stops
  them all, naming the rank, when one fails or stops making progress.
- nccl.py: a thin cffi binding to NCCL, which sums the gradients (the all-reduce is NCCL's).
- communicator.py: `NcclCommunicator`, the interface a step talks to (all_reduce, wait, broadcast).
- buckets.py: `GradientBuckets`, the gradients all-reduced in buckets while backward still runs.
- step.py: `DataParallelStep`, each rank's shard of every global batch and the identical update.
"""
