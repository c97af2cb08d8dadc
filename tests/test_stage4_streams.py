"""The nvcc variant's streams, pinned memory and events (csrc/streams.cu), the host pipeline that
uses them, and NCCL with one rank: on a GPU (each test is skipped, saying why, without one)."""

import numpy as np
import pytest
from conftest import load_tier
from test_host_pipeline import RECIPE, images, model

from nn.distributed import nccl
from nn.steps import HostStep, PipelinedStep
from nn.trainer import Trainer


def test_a_pinned_copy_on_a_stream_arrives_whole():
    gpu = load_tier("nvcc")
    values = np.random.default_rng(0).standard_normal(100_003).astype(np.float32)
    pinned = gpu.pinned_empty(values.shape)
    pinned[:] = values
    stream = gpu.Stream()
    for source in (pinned, values):  # page-locked, then ordinary memory
        device = gpu.from_numpy(np.full(values.shape, np.nan, np.float32))
        began = gpu.Event(timing=True).record(stream)
        gpu.upload(device, source, stream)
        ended = gpu.Event(timing=True).record(stream)
        ended.synchronize()
        assert np.array_equal(gpu.to_numpy(device), values)
        assert began.elapsed_ms(ended) > 0


def test_an_upload_of_the_wrong_size_is_refused():
    gpu = load_tier("nvcc")
    with pytest.raises(ValueError, match="upload: source holds 8 bytes, destination 12"):
        gpu.upload(gpu.empty((3,)), np.zeros(2, np.float32))


def test_the_default_streams_wait_for_an_event_of_the_copy_stream():
    gpu = load_tier("nvcc")
    count = 1 << 22
    pinned = gpu.pinned_empty((count,))
    pinned[:] = 3.0
    device = gpu.from_numpy(np.zeros(count, np.float32))
    stream, copied = gpu.Stream(), gpu.Event()
    gpu.upload(device, pinned, stream)
    copied.record(stream)
    copied.wait()  # the kernels below run after the copy, with no host wait
    total = gpu.to_numpy(gpu.sum_rows(device.reshape(1024, -1)))
    assert np.all(total == 3.0 * 1024)


def test_the_pipelined_trainer_follows_host_step_on_the_gpu(tmp_path):
    gpu = load_tier("nvcc")
    data = images()
    pipelined = Trainer(model(gpu), data, RECIPE, tmp_path / "p", progress_bar=False,
                        echo=lambda line: None)  # fmt: skip
    assert isinstance(pipelined.train_step, PipelinedStep)
    pipelined.fit()
    plain = Trainer(model(gpu), data, RECIPE, tmp_path / "h", progress_bar=False,
                    echo=lambda line: None)  # fmt: skip
    plain.train_step = HostStep(plain.model, plain.optimizer, data, RECIPE)
    plain.fit()
    for ours, theirs in zip(pipelined.model.parameters().values(),
                            plain.model.parameters().values(), strict=True):  # fmt: skip
        np.testing.assert_allclose(gpu.to_numpy(ours.value), gpu.to_numpy(theirs.value),
                                   rtol=1e-5, atol=1e-6)  # fmt: skip


def test_nccl_with_one_rank_sums_and_broadcasts_in_place():
    gpu = load_tier("nvcc")
    try:
        identity = nccl.unique_id()
    except RuntimeError as error:
        pytest.skip(str(error))
    from nn.distributed.communicator import NcclCommunicator

    communicator = NcclCommunicator(gpu, 0, 1, identity)
    values = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    arrays = [gpu.from_numpy(values), gpu.from_numpy(np.arange(5, dtype=np.int64))]
    communicator.all_reduce(arrays)
    communicator.wait()
    communicator.broadcast(arrays)
    assert np.array_equal(gpu.to_numpy(arrays[0]), values)
    assert np.array_equal(gpu.to_numpy(arrays[1]), np.arange(5))
    communicator.close()
