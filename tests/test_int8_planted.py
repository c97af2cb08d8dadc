"""The grader catches planted int8 bugs: each tier under tests/planted/int8_*/ is the reference
stage 2 with one int8 op broken (rounding, a narrow accumulator, a scale or zero point missing,
the padding's code; the _to_int8 forms rounding halves up or clamping their ReLU at the code 0,
int8 pooling that sees one row of each window), and a copy of stage3_c whose SIMD rungs drop
the tail of K (rounded down to a multiple of 4 instead of up). Grading must fail the op with a
message naming the bad element."""

import re
import shutil
from pathlib import Path

import pytest
from test_grader_planted_bugs import PLANTED, run_grader

# (planted tier, op, pattern of the failed correctness check's message)
BUGS = [
    ("int8_round_half_up", "quantize_int8",
     r"^quantize_int8: q\[[\d, ]+\] expected -?\d+, received -?\d+; \d+ of \d+ elements differ "
     r"\(exact match required\)"),
    ("int8_int16_sums", "int8_linear",
     r"^int8_linear: y\[[\d, ]+\] expected -?[\d.]+, received -?[\d.]+; .*x_zero=-128"),
    ("int8_one_scale", "int8_linear",
     r"^int8_linear: y\[0, [1-9]\d*\] expected -?[\d.]+, received -?[\d.]+"),
    ("int8_no_zero_point", "int8_linear",
     r"^int8_linear: y\[[\d, ]+\] expected .*x_zero=-128"),
    ("int8_conv_pads_zero", "int8_conv2d",
     r"^int8_conv2d: y\[[\d, ]+\] expected -?[\d.]+, received -?[\d.]+; .*padding=1"),
    ("int8_requantize_half_up", "int8_linear_to_int8",
     r"^int8_linear_to_int8: q\[[\d, ]+\] expected -?\d+, received -?\d+; .*exact match"),
    ("int8_relu_at_code_zero", "int8_conv2d_to_int8",
     r"^int8_conv2d_to_int8: q\[[\d, ]+\] expected -?\d+, received 0; .*y_zero=10 .*relu=True"),
    ("int8_pool_first_row", "maxpool2d_int8",
     r"^maxpool2d_int8: q\[[\d, ]+\] expected -?\d+, received -?\d+; .*k=2 stride=2"),
]  # fmt: skip


@pytest.mark.parametrize(("bug", "op", "pattern"), BUGS, ids=[bug[0] for bug in BUGS])
def test_planted_int8_bug_fails(tmp_path, bug, op, pattern):
    status, results, printed = run_grader(tmp_path, 2, impl=str(PLANTED / bug), ops=(op,),
                                          checks=("correct",), isolate=True)  # fmt: skip
    failed = [r for r in results if r.status == "failed" and r.op == op]
    assert status == 1
    assert failed, printed
    assert re.search(pattern, failed[0].message), failed[0].message


SIMD_TAIL = ("csrc/int8.c", "    const int64_t k4 = (k + 3) / 4 * 4;\n",
             "    const int64_t k4 = k / 4 * 4 > 0 ? k / 4 * 4 : 4;\n")  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_a_simd_rung_that_drops_the_tail_of_k_fails(tmp_path):
    folder = tmp_path / "planted"
    shutil.copytree(Path(__file__).parent.parent / "stage3_c", folder / "stage3_c",
                    ignore=shutil.ignore_patterns("_build", "*.so", "_s2c_native*.c",
                                                  "__pycache__"))  # fmt: skip
    file, reference, planted = SIMD_TAIL
    path = folder / "stage3_c" / file
    assert path.read_text().count(reference) == 1, f"{file} no longer holds the text to plant"
    path.write_text(path.read_text().replace(reference, planted))
    status, results, printed = run_grader(folder, 3, impl=str(folder), ops=("int8_linear",),
                                          checks=("correct",))  # fmt: skip
    failed = [r for r in results if r.status == "failed" and r.op == "int8_linear"]
    assert status == 1 and failed, printed
    message = failed[0].message
    assert re.search(r"^int8_linear: y\[[\d, ]+\] expected .*exact.*\[case 1 of .* x\[1, 7\]",
                     message), message  # K = 7: one code past the last group of four
