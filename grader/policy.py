"""How fast a tier must be: the speed policy, per pair of tiers, that fails a too-slow op.

What a learner may fairly be asked of each stage:

- stage 2 (NumPy) against stage 1 (pure Python), at the sizes both run (each ladder's first size);
- stage 3 (C) a share of stage 2's speed (NumPy; OpenBLAS for matmul and the linear layer), at
  every ladder size: below 1 where NumPy is the faster, as for tanh (NumPy's own SIMD kernel
  against C's scalar `tanhf`);
- stage 4 (CUDA): a share of the GPU's roofline at each op's largest size (STAGE4_ROOFLINE_SHARE).

Both CPU policies judge the two tiers on one thread each (NumPy's BLAS limited to one thread by
threadpoolctl, C's `set_num_threads(1)`), timed in turn by the process's CPU time
(grader/speed.py): with more threads than free cores, as on a shared machine or a learner's busy
laptop, multi-threaded wall-clock timings collapse (two BLAS threads on two busy cores made the
repository's linear_backward 10x the speed of stage 1, against 600x asked), while one thread's CPU
time is what a busy machine still measures fairly.

Each figure is one twentieth of what the repository's own stage reached on the 2-core CI machine
(the lesser of two full runs or more, with up to 8 other jobs sharing its cores; each ratio is
taken within one run, so that a shared or slower CPU moves both sides), rounded down: the
reference passes with a 10x margin over run-to-run noise, while an op written 1000x too slow (a
Python loop in stage 2, say) fails. An op missing from a table has no requirement for that pair.
"""

# Speedup over stage 1 that stage 2 must reach, both on one thread by CPU time: the least of two
# runs' measured speedups / 20, rounded down to two significant figures. Measured on the 2-core AMD
# EPYC machine with a busy loop on each core and other jobs loading it (load 50-70): two
# `python -m grader --stage 2 --checks speed` runs side by side; e.g. matmul 680x at 64^3, relu
# 1370x, and maxpool2d_forward 12x and cross_entropy_loss 31x, whose sizes are small enough that
# NumPy's fixed cost per call weighs most.
# fmt: off
STAGE2_OVER_STAGE1 = {
    "matmul": 33, "transpose": 57, "add": 180, "mul": 180, "scale": 100, "sum_rows": 94,
    "linear_forward": 170, "linear_backward": 130, "relu": 68, "relu_backward": 88,
    "leaky_relu": 7.2, "leaky_relu_backward": 13, "sigmoid": 6.4, "sigmoid_backward": 110,
    "tanh": 110, "tanh_backward": 120, "softmax": 10, "softmax_backward": 27, "log_softmax": 11,
    "log_softmax_backward": 22, "mse_loss": 71, "mse_loss_backward": 170,
    "cross_entropy_loss": 1.5, "cross_entropy_loss_backward": 1.5, "bce_with_logits_loss": 30,
    "bce_with_logits_loss_backward": 17, "hinge_loss": 1, "hinge_loss_backward": 0.94,
    "im2col": 3.1, "col2im": 9.1, "conv2d_forward": 16, "conv2d_backward": 20,
    "maxpool2d_forward": 0.59, "maxpool2d_backward": 2.9, "avgpool2d_forward": 9.8,
    "avgpool2d_backward": 2.6, "batchnorm_forward": 15, "batchnorm_backward": 27,
    "dropout_forward": 13, "dropout_backward": 130, "sgd_step": 66, "momentum_step": 60,
    "rmsprop_step": 41, "adam_step": 38, "xavier_uniform": 5.1, "he_normal": 2.9,
    "conv2d_bias_relu_pool": 13,  # 274x and 315x in two runs (load 10-14)
    # two runs (load near 30): layernorm 201x and 199x, its backward 235x and 226x, gelu 11.8x and
    # 10.1x (stage 2's erf is Python's math.erf per element), gelu_backward 21.2x and 22.1x
    "layernorm": 9.9, "layernorm_backward": 11, "gelu": 0.5, "gelu_backward": 1,
    # two runs (load 8-13): attention 136x and 108x, its backward 81.7x and 178x
    "attention": 5.4, "attention_backward": 4,
}
# fmt: on

# Stage 3 over stage 2, each on one thread (the speedup of C over NumPy; a share where below 1).
# OpenMP's timings collapse when a shared machine's cores are oversubscribed (with 8 jobs on the
# 2 cores, the repository's linear_forward ran at 0.002x of stage 2), so the policy times the C
# tier with set_num_threads(1) and NumPy with its BLAS limited to one thread (threadpoolctl), in
# turn, by the process's CPU time, which waiting for a core does not lengthen (for work done on
# one thread, that thread's CPU time: the figures below were measured by it).
# Measured on the 2-core AMD EPYC machine, other jobs loading it (load 5-16):
# two full runs `python -m grader --stage 3` side by side, two `--checks speed` runs side by side
# and one full run alone; the least speedup over all sizes and the five runs, e.g. matmul 0.52
# (its 64^3; 0.9 of OpenBLAS at 1024^3), relu 0.58, tanh 0.023, bce_with_logits_loss 0.14,
# leaky_relu 4.2, col2im 2.3; then / 20, rounded down. Why 20: between runs an op's ratio moved
# by up to 2.2x (sum_rows 0.33-0.73, dropout_forward 0.45-0.89), and the C tier built for a
# generic CPU (`-march=x86-64-v2`, as `make portability` does) loses up to 8x against NumPy,
# which picks AVX2 kernels at run time (relu_backward 1.15 -> 0.15, leaky_relu 4.2 -> 0.98,
# matmul 0.52 -> 0.10): that build, measured under load, passes every figure here by 3x or
# more, while a 1000x-slow op fails by 50x.
# fmt: off
STAGE3_OVER_STAGE2 = {
    "matmul": 0.02, "transpose": 0.02, "add": 0.01, "mul": 0.01, "scale": 0.02, "sum_rows": 0.01,
    "linear_forward": 0.01, "linear_backward": 0.02, "relu": 0.02, "relu_backward": 0.05,
    "leaky_relu": 0.2, "leaky_relu_backward": 0.2, "sigmoid": 0.03, "sigmoid_backward": 0.05,
    "tanh": 0.001, "tanh_backward": 0.05, "softmax": 0.02, "softmax_backward": 0.03,
    "log_softmax": 0.02, "log_softmax_backward": 0.02, "mse_loss": 0.02, "mse_loss_backward": 0.04,
    "cross_entropy_loss": 0.02, "cross_entropy_loss_backward": 0.01,
    "bce_with_logits_loss": 0.006, "bce_with_logits_loss_backward": 0.02, "hinge_loss": 0.01,
    "hinge_loss_backward": 0.02, "im2col": 0.03, "col2im": 0.1, "conv2d_forward": 0.05,
    "conv2d_backward": 0.06, "maxpool2d_forward": 0.1, "maxpool2d_backward": 0.04,
    "avgpool2d_forward": 0.05, "avgpool2d_backward": 0.05, "batchnorm_forward": 0.07,
    "batchnorm_backward": 0.07, "dropout_forward": 0.02, "dropout_backward": 0.03,
    "sgd_step": 0.04, "momentum_step": 0.04, "rmsprop_step": 0.04, "adam_step": 0.03,
    "xavier_uniform": 0.09, "he_normal": 0.04,
    "conv2d_bias_relu_pool": 0.08,  # least 1.67x over two runs (load 10-14)
    # least over two runs (load near 30): layernorm 1.27x, its backward 1.4x, gelu 1.06x and
    # gelu_backward 1.13x (both at the tanh form, against NumPy's vectorized tanh and exp)
    "layernorm": 0.06, "layernorm_backward": 0.07, "gelu": 0.05, "gelu_backward": 0.05,
    # least over two runs (load 8-13): attention 0.548x (N = M = 1024: NumPy's scores are one
    # SGEMM, C's a dot product per query and key), its backward 0.17x (N = M = 65, D = 32)
    "attention": 0.02, "attention_backward": 0.008,
}
# fmt: on
SPEEDUP = {(2, 1): STAGE2_OVER_STAGE1, (3, 2): STAGE3_OVER_STAGE2}


# Stage 4: the share of its roofline (grader/roofline.py: the time the op's bytes and FLOPs take
# at the device's measured copy bandwidth and SGEMM rate) that an op must reach at its largest GPU
# ladder size, where it fills the device (small sizes measure launch latency, not kernels). Each
# figure is a quarter of what the repository's kernel reached on an H100 (its grade run,
# curriculum/results/grade-stage4-numba.json; sum_rows and avgpool2d_forward rescaled to the
# cost model's later, smaller byte counts: grader/costs.py's work_written), rounded down: a GPU
# is not shared the way the CI machine's cores are, so a margin of 4 covers another GPU
# generation and run-to-run spread, while
# a kernel that serializes its work (one thread, or one block, doing what a grid should) fails.
# Ops whose own kernels stay below 8% of the roofline (the losses' single-block means, conv
# backward, batchnorm forward: see stage4_cuda/README.md) have no requirement yet: a quarter of
# almost nothing would ask nothing.
# fmt: off
STAGE4_ROOFLINE_SHARE = {
    "matmul": 0.12, "transpose": 0.12, "add": 0.18, "mul": 0.18, "scale": 0.22, "sum_rows": 0.04,
    "linear_forward": 0.11, "linear_backward": 0.11, "relu": 0.22, "relu_backward": 0.22,
    "leaky_relu": 0.22, "leaky_relu_backward": 0.22, "sigmoid": 0.21, "sigmoid_backward": 0.22,
    "tanh": 0.21, "tanh_backward": 0.22, "softmax": 0.09, "softmax_backward": 0.13,
    "log_softmax": 0.1, "log_softmax_backward": 0.14, "mse_loss_backward": 0.2,
    "bce_with_logits_loss_backward": 0.16, "col2im": 0.03, "conv2d_forward": 0.02,
    "maxpool2d_forward": 0.12, "avgpool2d_forward": 0.1, "batchnorm_backward": 0.02,
    "dropout_forward": 0.17, "dropout_backward": 0.19, "sgd_step": 0.23, "momentum_step": 0.23,
    "rmsprop_step": 0.23, "adam_step": 0.23, "xavier_uniform": 0.11, "he_normal": 0.03,
}
# fmt: on


def roofline_share(op_name, largest):
    """The share of the GPU's roofline a stage 4 op must reach, or None for no requirement:
    only at the op's largest ladder size (`largest`)."""
    return STAGE4_ROOFLINE_SHARE.get(op_name) if largest else None


def speed_problem(op_name, graded_stage, timing, largest=False):
    """Why `timing` (a speed check's record, grader/speed.py) is too slow, or None.

    The record holds the graded tier's median and, where it ran at this size, the reference
    tier's (`reference`, `speedup`); for a tier that sets its thread count, also both on one
    thread (`one_thread`), the speedup judged then; on a GPU its share of the roofline
    (`roofline_share`). `largest`: whether this is the op's largest ladder size.
    """
    problems = []
    reference = timing.get("reference")
    if reference and "speedup" in timing:
        wanted = SPEEDUP.get((graded_stage, reference["stage"]), {}).get(op_name)
        speedup, how = timing["speedup"], ""
        if "one_thread" in timing:  # a tier that sets its threads is judged on one thread
            speedup, how = timing["one_thread"]["speedup"], " (one thread each)"
        if wanted is not None and speedup < wanted:
            problems.append(
                f"{_ratio(speedup)} the speed of {reference['tier']}{how}, expected at least "
                f"{_ratio(wanted)} (stage {graded_stage}'s speed policy, grader/policy.py)"
            )
    share = timing.get("roofline_share")
    if graded_stage == 4 and share is not None:
        wanted = roofline_share(op_name, largest)
        if wanted is not None and share < wanted:
            problems.append(
                f"{share:.1%} of the roofline, expected at least {wanted:.0%} (stage 4's "
                "speed policy, grader/policy.py)"
            )
    if not problems:
        return None
    return f"{op_name}: too slow: " + "; ".join(problems)


def _ratio(value):
    return f"{value:.3g}x"
