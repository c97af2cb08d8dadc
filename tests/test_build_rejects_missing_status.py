"""A C or CUDA function declared to return a status that returns none fails the build.

Its caller would read whatever the register held, perhaps S2C_OK: an exercise stub of the wrong
shape (`return;` in a launcher) would let an op not written yet "run" in a microsecond. The C tier
builds with `-Werror=return-type`, the nvcc library with `--diag-error 117,940`.
"""

import shutil
import subprocess

import pytest

from stage3_c.build import compile_flags
from stage4_cuda.nvcc_build import FLAGS, gencode, nvcc

NO_VALUE = 'int status(int n) {\n    if (n) return 1;\n    return;\n}\n'
NO_RETURN = 'int status(int n) {\n    if (n) return 1;\n}\n'
RETURNS = 'int status(int n) {\n    if (n) return 1;\n    return 0;\n}\n'
CASES = [(NO_VALUE, False), (NO_RETURN, False), (RETURNS, True)]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc on this machine")
@pytest.mark.parametrize(("source", "builds"), CASES)
def test_the_c_tier_build_refuses_a_status_function_without_a_value(tmp_path, source, builds):
    path = tmp_path / "status.c"
    path.write_text(source)
    flags = [flag for flag in compile_flags(arch="") if flag != "-fopenmp"]
    done = subprocess.run(["gcc", *flags, "-c", str(path), "-o", str(tmp_path / "status.o")],
                          capture_output=True, text=True)  # fmt: skip
    assert (done.returncode == 0) == builds, done.stderr
    if not builds:
        assert "return" in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(nvcc() is None, reason="no nvcc on this machine")
@pytest.mark.parametrize(("source", "builds"), CASES)
def test_the_nvcc_build_refuses_a_status_function_without_a_value(tmp_path, source, builds):
    path = tmp_path / "status.cu"
    path.write_text(f'extern "C" {source}')
    line = [nvcc(), *FLAGS, *gencode(("90",)), str(path), "-o", str(tmp_path / "status.so")]
    done = subprocess.run(line, capture_output=True, text=True)
    assert (done.returncode == 0) == builds, done.stdout + done.stderr
    if not builds:
        assert "return" in done.stdout + done.stderr
