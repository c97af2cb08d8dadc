"""The machine a tier ran on (CPU model, BLAS, GPU), for the grader's records, the benchmark tables
and nn's training results alike."""

import os
import platform
import shutil
import subprocess

import numpy as np

# numba's warning that a grid of few blocks leaves the GPU idle, which it prints in bold (a
# terminal's escape code first): the grader's cases and a training batch are small on purpose
LOW_OCCUPANCY_NOTE = r"(\x1b\[1m)?Grid size \d+ will likely result in GPU under-utilization"


def cpu_model():
    """The CPU's model name (/proc/cpuinfo on Linux), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name():
    """The first GPU's name from nvidia-smi, or None (no NVIDIA driver, no GPU)."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        answer = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    names = answer.stdout.strip().splitlines()
    return names[0] if names else None


def _blas():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [
        {
            "library": pool.get("internal_api"),
            "version": pool.get("version"),
            "threads": pool.get("num_threads"),
            "architecture": pool.get("architecture"),
        }
        for pool in threadpool_info()
        if pool.get("user_api") == "blas"
    ]


def machine_info():
    """CPU model, cores, OS, Python, NumPy and its BLAS, GPU name (None without one)."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas(),
        "gpu": gpu_name(),
    }


def describe_machine(info):
    """One line: 'AMD EPYC, 2 cores, Linux-6.1, Python 3.11.2, NumPy 2.4.6 (openblas ...)'."""
    blas = ", ".join(f"{b['library']} {b['version']}, {b['threads']} threads" for b in info["blas"])
    parts = [
        info["cpu"],
        f"{info['cores']} cores",
        info["os"],
        f"Python {info['python']}",
        f"NumPy {info['numpy']}" + (f" ({blas})" if blas else ""),
    ]
    if info["gpu"]:
        parts.append(f"GPU {info['gpu']}")
    return ", ".join(parts)
