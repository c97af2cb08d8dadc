"""The benchmarks: each module times one thing against a yardstick and writes a record.

    python -m bench.ops_vs_pytorch  every op of the contract on stage 4 beside PyTorch's
    python -m bench.memory_bound    stage 4's memory-bound ops against the copy bandwidth
    python -m bench.conv_ladder     the nvcc variant's conv2d ladder beside cuDNN
    python -m bench.softmax_ladder  the nvcc variant's softmax ladder beside a copy and PyTorch
    python3 bench/sgemm_ladder.py   the CUDA C SGEMM ladder beside cuBLAS (standard library only)
    python -m bench.epoch           one training epoch on a tier beside PyTorch
    python -m bench.race            one epoch on the nvcc variant, eager and as CUDA graphs
    python -m bench.speedrun        MNIST to 99% on the nvcc variant against the clock

The grader's own speed checks (and `python -m grader bench`, its ladders at larger sizes) stay
in grader/: they judge a tier through its interface. A benchmark of a ladder inside a tier calls
that tier's private launchers directly, which only this package may do.
"""
