"""The nvcc library's target cards: S2C_CUDA_ARCH, else the cards nvidia-smi lists, else sm_80 and
sm_90 (stage4_cuda/nvcc_build.py). Checked on the nvcc command line, with a stand-in compiler and a
stand-in nvidia-smi: nothing is compiled."""

import os
import sys

import pytest

from stage4_cuda import nvcc_build

STAND_IN_NVCC = """#!{python}
import sys
from pathlib import Path
Path(sys.argv[sys.argv.index("-o") + 1]).write_bytes(b"library")
with open({log!r}, "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
"""


@pytest.fixture
def library(tmp_path, monkeypatch):
    """The library and its record of targets in tmp_path, built by a stand-in nvcc that logs its
    command line to tmp_path/nvcc.log; no nvidia-smi on the PATH."""
    built = tmp_path / "stage4_cuda" / "nvcc_impl" / "_build"
    monkeypatch.setattr(nvcc_build, "PACKAGE_DIR", tmp_path / "stage4_cuda")
    monkeypatch.setattr(nvcc_build, "LIBRARY", built / "libs2c_cuda.so")
    monkeypatch.setattr(nvcc_build, "TARGETS_BUILT", built / "targets.txt")
    compiler = tmp_path / "nvcc"
    compiler.write_text(STAND_IN_NVCC.format(python=sys.executable, log=str(tmp_path / "nvcc.log")))
    compiler.chmod(0o755)
    monkeypatch.setenv("NVCC", str(compiler))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # neither nvcc nor nvidia-smi found there
    monkeypatch.delenv(nvcc_build.ARCH_VARIABLE, raising=False)
    return tmp_path


def stand_in_nvidia_smi(folder, answer):
    """An nvidia-smi in folder/bin that prints `answer` (one compute capability a card)."""
    (folder / "bin").mkdir()
    program = folder / "bin" / "nvidia-smi"
    program.write_text(f"#!/bin/sh\nprintf '{answer}'\n")
    program.chmod(0o755)


@pytest.mark.parametrize("text, expected", [
    ("75", ("75",)), ("7.5", ("75",)), ("sm_75", ("75",)), ("SM_86, compute_90", ("86", "90")),
    ("9.0 8.0 9.0", ("80", "90")), ("12.0", ("120",)), ("sm_100", ("100",)),
])  # fmt: skip
def test_compute_capabilities_are_read_in_every_usual_spelling(text, expected):
    assert nvcc_build.parse_arches(text) == expected


@pytest.mark.parametrize("text", ["turing", "sm_7", "7.5.1", "native", ",", "sm_75a"])
def test_anything_else_names_the_setting_and_what_it_expects(text):
    with pytest.raises(ValueError, match="S2C_CUDA_ARCH: expected .*compute capabilit"):
        nvcc_build.parse_arches(text)


def test_machine_code_for_each_target_and_ptx_for_the_newest():
    assert nvcc_build.gencode(("75", "86")) == [
        "-gencode=arch=compute_75,code=sm_75", "-gencode=arch=compute_86,code=sm_86",
        "-gencode=arch=compute_86,code=compute_86"]  # fmt: skip


def test_the_setting_reaches_the_nvcc_command_line(library, monkeypatch, capsys):
    monkeypatch.setenv("S2C_CUDA_ARCH", "7.5")
    assert nvcc_build.main([]) == 0
    line = (library / "nvcc.log").read_text()
    assert "-gencode=arch=compute_75,code=sm_75 -gencode=arch=compute_75,code=compute_75" in line
    assert "sm_80" not in line and "sm_90" not in line and "compute_90" not in line
    assert "code=sm_75" in capsys.readouterr().out  # the build says what it built for
    assert nvcc_build.built_arches() == ("75",)
    assert nvcc_build.stale_reason() == ""


def test_a_library_built_for_other_cards_is_rebuilt(library, monkeypatch):
    assert nvcc_build.main([]) == 0  # no setting, no card: the defaults
    assert "code=sm_80" in (library / "nvcc.log").read_text()
    monkeypatch.setenv("S2C_CUDA_ARCH", "75")
    assert nvcc_build.stale_reason() == (
        "built for sm_80 sm_90, not for sm_75 (S2C_CUDA_ARCH, else the GPU's)")
    assert nvcc_build.main(["--if-stale"]) == 0
    assert "code=sm_75" in (library / "nvcc.log").read_text().splitlines()[-1]
    assert nvcc_build.main(["--if-stale"]) == 0  # up to date now: not built again
    assert len((library / "nvcc.log").read_text().splitlines()) == 2


def test_without_the_setting_the_cards_nvidia_smi_lists_are_the_targets(library):
    stand_in_nvidia_smi(library, "7.5\\n8.6\\n7.5\\n")
    assert nvcc_build.arches() == ("75", "86")
    assert nvcc_build.main([]) == 0
    assert "code=sm_75" in (library / "nvcc.log").read_text()


def test_the_setting_wins_over_the_card(library, monkeypatch):
    stand_in_nvidia_smi(library, "7.5\\n")
    monkeypatch.setenv("S2C_CUDA_ARCH", "sm_90")
    assert nvcc_build.arches() == ("90",)


def test_a_failing_or_odd_nvidia_smi_leaves_the_defaults(library):
    stand_in_nvidia_smi(library, "No devices were found\\n")
    assert nvcc_build.arches() == nvcc_build.DEFAULT_ARCHES


def test_a_bad_setting_stops_the_build_with_the_reason(library, monkeypatch, capsys):
    monkeypatch.setenv("S2C_CUDA_ARCH", "turing")
    assert nvcc_build.main([]) == 1
    assert "S2C_CUDA_ARCH: expected compute capabilities" in capsys.readouterr().err
    assert not (library / "nvcc.log").exists()


def test_a_library_holding_the_card_is_not_rebuilt(library, monkeypatch):
    """The default build (sm_80, sm_90) on an H100: nothing to rebuild for sm_90 alone."""
    assert nvcc_build.main([]) == 0
    monkeypatch.setenv("S2C_CUDA_ARCH", "90")
    assert nvcc_build.stale_reason() == ""


def test_without_nvcc_a_library_for_other_cards_is_left_as_it_is(library, monkeypatch, capsys):
    assert nvcc_build.main([]) == 0
    monkeypatch.setattr(nvcc_build, "nvcc", lambda: None)
    monkeypatch.setenv("S2C_CUDA_ARCH", "75")
    assert nvcc_build.main(["--if-stale"]) == 0  # a load: the library may still run (its PTX)
    assert capsys.readouterr().err == ""
    os.utime(nvcc_build.LIBRARY, (0, 0))  # now older than its sources: never run silently
    assert nvcc_build.main(["--if-stale"]) == 1
    assert "out of date (changed since the last build" in capsys.readouterr().err
