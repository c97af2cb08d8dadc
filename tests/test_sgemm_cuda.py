"""The SGEMM ladder in CUDA C (stage4_cuda/csrc/sgemm/), checked without a GPU.

nvcc compiles every rung alone (as CI does) for sm_80 and sm_90 with no register spills, the
learner's stubbed rungs compile too, and bench.cu builds with cuBLAS where cuBLAS is installed.
Every rung, and every tile configuration of rung 8, computes the product correctly on a CPU
emulation of CUDA (tests/cuda_emulation/: a block's threads are fibers, __syncthreads a
barrier), at sizes on and off the tiles. The table of the README is what
bench/sgemm_ladder.py makes of the committed results. Speed, and the real cp.async path, need
a GPU: `python3 bench/sgemm_ladder.py` checks each rung against cuBLAS there and times it.
"""

import importlib.util
import json
import re
import shutil
import subprocess

import pytest
from cuda_emulated import emulated

from tools.exercises import REPO_ROOT, stub_regions

SPEC = importlib.util.spec_from_file_location(
    "sgemm_ladder", REPO_ROOT / "bench" / "sgemm_ladder.py"
)
sgemm_ladder = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(sgemm_ladder)  # by path: the driver needs nothing but the standard library

NVCC = sgemm_ladder.find_nvcc()
# Rung 8's tile configurations: the CANDIDATE(...) entries of its table.
CANDIDATES = (sgemm_ladder.SGEMM_DIR / "08_cp_async.cu").read_text().count("CANDIDATE(") - 1
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
RUNGS = sgemm_ladder.rung_sources()
RUNG_NAMES = [
    "naive",
    "coalesced",
    "shared_tiles",
    "register_1d",
    "register_2d",
    "vectorized",
    "warp_tiles",
    "cp_async",
]


def nvcc(*args, cwd):
    """Run nvcc; fail the test with its messages when it fails; return its output."""
    done = subprocess.run([NVCC, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"nvcc {' '.join(map(str, args))}\n{done.stdout}{done.stderr}"
    return done.stdout + done.stderr


def test_the_ladder_has_eight_numbered_rungs_each_exporting_its_launcher():
    assert [path.name.split("_", 1)[0] for path in RUNGS] == [f"{i:02d}" for i in range(1, 9)]
    for path, name in zip(RUNGS, RUNG_NAMES, strict=True):
        text = path.read_text()
        assert f'extern "C" int s2c_sgemm_{name}(const float *a, const float *b, float *c,' in text
        assert "LAUNCH_CHECK(" in text
        assert "int main" not in text and "cublas_v2.h" not in text  # linked into the library
        assert f"python3 bench/sgemm_ladder.py --rung {RUNGS.index(path) + 1}" in text


def ptxas_spills(output):
    """{(kernel, architecture): spilled bytes (stores + loads)} from nvcc -Xptxas -v output."""
    spills, current = {}, None
    for line in output.splitlines():
        entry = re.search(r"Compiling entry function '(\w+)' for '(sm_\d+)'", line)
        if entry:
            current = entry.groups()
        found = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if found and current:
            spills[current] = int(found[1]) + int(found[2])
    return spills


@needs_nvcc
def test_every_rung_and_its_stub_compile_alone_for_sm80_and_sm90_without_spills(tmp_path):
    """One nvcc call: each rung as its own translation unit (as CI compiles it, -I its folder),
    errors.cu, bench.cu (without cuBLAS where it is not installed, as in CI), and the workspace's
    stub of each rung (tools/exercises.py)."""
    stubs = []
    for path in RUNGS:
        text, regions = stub_regions(path.read_text(), "c", str(path.relative_to(REPO_ROOT)))
        assert {region.task for region in regions} == {f"sgemm_{path.stem.split('_', 1)[1]}"}
        assert "return S2C_CUDA_NOT_IMPLEMENTED;" in text  # the launcher reports the stub
        assert re.search(r"^\s+return; /\* week 16, task", text, re.MULTILINE)  # the kernel
        stub = tmp_path / f"stub_{path.name}"
        stub.write_text(text)
        stubs.append(stub)
    sgemm = sgemm_ladder.SGEMM_DIR
    output = nvcc(
        "-c", "-Xptxas", "-v", *sgemm_ladder.arch_flags(["sm_80", "sm_90"]),
        "-I", sgemm, "-odir", tmp_path,
        *RUNGS, sgemm.parent / "errors.cu", sgemm / "bench.cu", *stubs, cwd=tmp_path,
    )  # fmt: skip
    objects = {path.name for path in tmp_path.glob("*.o")}
    assert objects == {f"{p.stem}.o" for p in [*RUNGS, *stubs]} | {"errors.o", "bench.o"}
    spills = {key: n for key, n in ptxas_spills(output).items() if "sgemm_" in key[0]}
    kernels = {kernel for kernel, _arch in spills}
    # rungs 1-3: one kernel; 4-7: with and without edge checks; 8: that for each configuration
    assert len(kernels) == 3 + 4 * 2 + CANDIDATES * 2, sorted(kernels)
    assert {arch for _kernel, arch in spills} == {"sm_80", "sm_90"}
    assert not {key: n for key, n in spills.items() if n}, "register spills"


@needs_nvcc
def test_the_bench_builds_with_every_rung_and_cublas(tmp_path):
    cublas = sgemm_ladder.find_cublas(NVCC)
    if cublas is None:
        pytest.skip("cuBLAS (cublas_v2.h, libcublas.so) is not installed here: set CUBLAS_ROOT")
    program = tmp_path / "sgemm_ladder"
    sgemm_ladder.build_bench(program, ["sm_90"], NVCC, cublas)
    assert program.is_file()


EMULATION = REPO_ROOT / "tests" / "cuda_emulation"


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed here")
def test_every_rung_and_tile_configuration_computes_the_product_on_a_cpu_emulation(tmp_path):
    for path in RUNGS:
        text = emulated(path.read_text())
        (tmp_path / path.name).write_text(text)
    assert "<<<" not in "".join(p.read_text() for p in tmp_path.glob("*.cu"))
    harness = tmp_path / "sgemm_harness.cpp"  # includes rung 8 itself, to reach its CANDIDATES
    shutil.copy(EMULATION / "sgemm_harness.cpp", harness)
    sources = [tmp_path / path.name for path in RUNGS if not path.name.startswith("08_")]
    command = ["g++", "-std=c++20", "-O1", "-pthread", "-fno-strict-aliasing", "-I", tmp_path]
    command += ["-I", EMULATION, "-I", sgemm_ladder.SGEMM_DIR, "-x", "c++", *sources]
    command += [sgemm_ladder.SGEMM_DIR.parent / "errors.cu", harness, "-o", tmp_path / "harness"]
    built = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    ran = subprocess.run([tmp_path / "harness"], capture_output=True, text=True, timeout=600)
    # sgemm_harness.cpp's main: 4 sizes for every rung and configuration, 3 for rung 8's alone
    expected = 4 * (len(RUNGS) + CANDIDATES) + 3 * (1 + CANDIDATES)
    assert ran.returncode == 0 and ran.stdout.endswith(f"{expected} passed, 0 failed\n"), ran.stdout


def fake_results(shares):
    """bench.cu's JSON for n = k = m in `shares` ({size: best rung's share of cuBLAS}), with the
    other rungs slower and rung 2 failing its check at the last size."""
    sizes = []
    for index, (size, share) in enumerate(shares.items()):
        gflop = 2 * size**3 / 1e9
        cublas_ms = gflop / 40_000 * 1e3
        rungs = []
        for rung, name in enumerate(RUNG_NAMES, start=1):
            rung_share = share * rung / 8
            wrong = rung == 2 and index == len(shares) - 1
            rungs.append({
                "rung": rung, "name": name, "status": "wrong" if wrong else "ok",
                "ms": cublas_ms / rung_share, "gflops": 40_000 * rung_share,
                "share_of_cublas": rung_share, "max_error_ratio": None if wrong else 1e-7,
                "registers": 32 + rung, "spill_bytes": 0,
                "config": "128x128x8, 4 stages" if rung == 8 else "",
            })  # fmt: skip
        sizes.append({
            "n": size, "k": size, "m": size, "gflop": gflop, "error_bound": 1e-5,
            "cublas": {"ms": cublas_ms, "gflops": 40_000}, "rungs": rungs,
        })  # fmt: skip
    return {
        "device": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "multiprocessors": 132,
        "date": "2026-11-23T09:00:00Z", "cuda_runtime": 13000, "cublas": 130100,
        "cublas_math": "CUBLAS_DEFAULT_MATH (no TF32)", "timing": "CUDA events",
        "check": "bound", "sizes": sizes,
    }  # fmt: skip


def test_the_table_gives_each_rung_and_judges_the_targets():
    table = sgemm_ladder.render_table(fake_results({1024: 0.70, 4096: 0.93}))
    assert "NVIDIA H100 80GB HBM3" in table
    assert "- 1024^3: best rung 8 (cp_async) at 70.0% of cuBLAS; target 75%: **not met**." in table
    assert "- 4096^3: best rung 8 (cp_async) at 93.0% of cuBLAS; target 90%: **met**." in table
    rows = [line for line in table.splitlines() if re.match(r"\| (\d|cuBLAS)", line)]
    assert len(rows) == 2 * 9
    assert "| 8 cp_async | 37200 | 93.0% |" in table  # GFLOP/s and share from the JSON
    assert "| 2 coalesced |" in table and "**wrong** (NaN or unwritten)" in table


def test_a_wrong_rung_cannot_be_the_best():
    results = fake_results({4096: 0.95})
    results["sizes"][0]["rungs"][7]["status"] = "wrong"
    assert sgemm_ladder.best_rung(results["sizes"][0])["rung"] == 7


def test_the_readme_table_is_the_one_the_committed_results_give(tmp_path):
    """Regenerated by its marker's command, never typed: `--table RESULTS --write`."""
    assert sgemm_ladder.readme_table() == sgemm_ladder.readme_section()
    results = tmp_path / "results.json"
    results.write_text(json.dumps(fake_results({4096: 0.9})))
    table = sgemm_ladder.readme_section(results)
    assert table.startswith("Measured 2026-11-23T09:00:00Z on NVIDIA H100")
    with pytest.raises(SystemExit, match="does not exist"):
        sgemm_ladder.readme_section(tmp_path / "missing.json")
