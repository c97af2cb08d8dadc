"""Step recordings (stage4_cuda/runtime/recording.py, nvcc_impl/recording.py) without a GPU:
the nvcc library is replaced by a fake one that logs its calls, and numba's kernels run on its
simulator. tests/test_nn_recorded_steps.py trains with recorded steps on the numba variant; on a
GPU, tests/test_stage4_nvcc.py trains with the nvcc variant's recordings and CUDA graphs. Both
require the weights of op-by-op training, bit for bit."""

import numpy as np
import pytest

from stage4_cuda import numba_impl
from stage4_cuda.nvcc_impl import _library, recording
from stage4_cuda.runtime import checks
from stage4_cuda.runtime import recording as numba_recording


class FakeLibrary:
    """Every function of s2c_cuda.h: logs (name, arguments) and returns S2C_CUDA_OK, or `failing`'s
    status."""

    def __init__(self):
        self.log, self.failing = [], {}
        self.message = _library.ffi.new("char[]", b"a_kernel: an error (cudaErrorUnknown)")

    def s2c_cuda_error_message(self):
        return self.message

    def __getattr__(self, name):
        if name not in _library.PARAMETERS:
            raise AttributeError(name)

        def function(*args):
            self.log.append((name, list(args)))
            return self.failing.get(name, _library.OK)

        return function


@pytest.fixture
def fake(monkeypatch):
    lib = FakeLibrary()
    monkeypatch.setattr(_library, "library", lambda: lib)
    return lib


def test_a_recording_repeats_the_calls_of_its_step_with_scalars_replaced_by_name(fake):
    p, g = object(), object()

    def step():
        _library.call("s2c_cuda_sgd_step", p, g, 10, 0.1, 0.0)
        _library.call("s2c_cuda_momentum_step", p, g, g, 10, 0.1, 0.9, 1, 0.0)
        return "done"

    result, recorded = recording.record_step(step)
    assert result == "done"
    assert [name for name, _ in fake.log] == ["s2c_cuda_sgd_step", "s2c_cuda_momentum_step"]
    fake.log.clear()
    recorded.launch(lr=0.25)
    assert fake.log == [("s2c_cuda_sgd_step", [p, g, 10, 0.25, 0.0]),
                        ("s2c_cuda_momentum_step", [p, g, g, 10, 0.25, 0.9, 1, 0.0])]  # fmt: skip
    fake.log.clear()
    recorded.launch()  # no scalar given: the recorded ones
    assert fake.log[0] == ("s2c_cuda_sgd_step", [p, g, 10, 0.1, 0.0])


class FakeDeviceArray:
    """A device array as the library's calls see it: an address."""

    def __init__(self, address):
        self.__cuda_array_interface__ = {"data": (address, False)}


def test_an_optimizers_momentum_steps_are_recorded_as_one_list(fake):
    # Each parameter's momentum step (3 of them, the last without weight decay) becomes one
    # momentum_step_list call, whose learning rate is still replaced by name; a momentum step
    # with another momentum, after another call, stays as it was.
    arrays = [FakeDeviceArray(4096 * address) for address in range(1, 10)]

    def step():
        for i, decay in enumerate([0.01, 0.01, 0.0]):
            _library.call("s2c_cuda_momentum_step", *arrays[3 * i : 3 * i + 3], 10 + i, 0.1, 0.9,
                          1, decay)  # fmt: skip
        _library.call("s2c_cuda_relu", arrays[0], arrays[1], 4)
        _library.call("s2c_cuda_momentum_step", *arrays[:3], 7, 0.1, 0.5, 1, 0.0)

    _, recorded = recording.record_step(step)
    assert [what for what, *_ in recorded.launches] == [
        "s2c_cuda_momentum_step_list", "s2c_cuda_relu", "s2c_cuda_momentum_step"]  # fmt: skip
    fake.log.clear()
    recorded.launch(lr=0.25)
    name, (p, g, v, n, decays, count, *scalars) = fake.log[0]
    assert name == "s2c_cuda_momentum_step_list"

    def addresses(pointers):
        return [int(_library.ffi.cast("uintptr_t", pointers[i])) for i in range(count)]

    assert (count, scalars) == (3, [0.25, 0.9, 1])
    assert addresses(p) == [4096, 4 * 4096, 7 * 4096]
    assert addresses(g) == [2 * 4096, 5 * 4096, 8 * 4096]
    assert addresses(v) == [3 * 4096, 6 * 4096, 9 * 4096]
    assert list(n[0:3]) == [10, 11, 12] and list(decays[0:3]) == pytest.approx([0.01, 0.01, 0])
    assert fake.log[2] == ("s2c_cuda_momentum_step", [*recorded.launches[2][2][:4], 0.25, 0.5, 1,
                                                      0.0])  # fmt: skip


def test_calls_outside_a_recording_are_not_recorded(fake):
    _, recorded = recording.record_step(lambda: None)
    _library.call("s2c_cuda_relu", object(), object(), 4)
    assert recorded.launches == []


def test_a_failing_call_during_a_launch_raises_as_the_op_would(fake):
    _, recorded = recording.record_step(lambda: _library.call("s2c_cuda_relu", None, None, 4))
    fake.failing["s2c_cuda_relu"] = _library.NOT_IMPLEMENTED
    with pytest.raises(NotImplementedError, match="week 14, task relu"):
        recorded.launch()


def test_numba_kernels_are_recorded_and_launched_again(rng):
    x = numba_impl.from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
    y, recorded = numba_recording.record_step(lambda: numba_impl.scale(x, 2.0))
    assert [what for what, *_ in recorded.launches] == ["numba"]
    x.copy_to_device(np.ones((5, 3), np.float32))
    recorded.launch()  # the same kernel on the same buffers: y follows x
    np.testing.assert_array_equal(numba_impl.to_numpy(y), np.full((5, 3), 2.0, np.float32))


def test_a_replaced_scalar_keeps_the_type_it_was_recorded_with(rng):
    p = numba_impl.from_numpy(np.ones(8, np.float32))
    g = numba_impl.from_numpy(np.ones(8, np.float32))
    _, recorded = numba_recording.record_step(lambda: numba_impl.sgd_step(p, g, 0.5))
    recorded.launch(lr=0.25)  # a Python float, passed as the float32 the kernel was compiled for
    np.testing.assert_array_equal(numba_impl.to_numpy(p), np.full(8, 0.25, np.float32))


def test_the_checks_range_kernel_is_not_recorded():
    labels = numba_impl.from_numpy(np.array([0, 2, 1], np.int64))
    result, recorded = numba_recording.record_step(
        lambda: checks.TIER.index_range(labels))
    assert result == (0, 2)
    assert recorded.launches == []


def test_a_graph_refuses_a_recording_with_numba_kernels(fake):
    x = numba_impl.from_numpy(np.ones((4, 4), np.float32))
    _, recorded = recording.record_step(lambda: numba_impl.transpose(x))
    with pytest.raises(ValueError, match="launched 1 numba kernel"):
        recording.capture_graph(recorded)


def test_a_graph_is_captured_at_its_first_launch_and_again_for_new_scalars(fake):
    _, recorded = recording.record_step(
        lambda: _library.call("s2c_cuda_sgd_step", None, None, 10, 0.1, 0.0))
    fake.log.clear()
    graph = recording.capture_graph(recorded)
    graph.launch(lr=0.1)
    graph.launch(lr=0.1)
    graph.launch(lr=0.2)
    names = [name for name, _ in fake.log]
    captured = ["s2c_cuda_capture_begin", "s2c_cuda_sgd_step", "s2c_cuda_capture_end"]
    assert names == [*captured, "s2c_cuda_graph_launch", "s2c_cuda_graph_launch",
                     "s2c_cuda_graph_destroy", *captured, "s2c_cuda_graph_launch"]  # fmt: skip
    assert fake.log[-3][1][3] == 0.2  # the second capture's learning rate


def test_a_failed_call_still_ends_the_capture(fake):
    _, recorded = recording.record_step(lambda: _library.call("s2c_cuda_relu", None, None, 4))
    fake.failing["s2c_cuda_relu"] = _library.CUDA_ERROR
    fake.log.clear()
    with pytest.raises(RuntimeError, match="s2c_cuda_relu failed"):
        recording.capture_graph(recorded).launch()
    assert fake.log[-1][0] == "s2c_cuda_capture_end"


def test_copy_into_checks_what_it_copies(fake):
    order = numba_impl.from_numpy(np.arange(10, dtype=np.int64))
    batch = numba_impl.from_numpy(np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="do not fit"):
        recording.copy_into(batch, order, start=8, count=4)
    with pytest.raises(ValueError, match="destination is int64, source float32"):
        recording.copy_into(batch, numba_impl.from_numpy(np.zeros(4, np.float32)))
