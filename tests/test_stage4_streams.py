"""The nvcc variant's streams, pinned memory and events (csrc/streams.cu), the augmentation on the
device (csrc/augment.cu), the host pipeline that uses them, and NCCL with one rank: on a GPU (each
test is skipped, saying why, without one)."""

import numpy as np
import pytest
from conftest import load_tier
from numba import cuda
from test_host_pipeline import AUGMENTS, COLOUR, RECIPE, images, model

from nn.augment import batch_augmented, batch_draws
from nn.data import Normalizer
from nn.distributed import nccl
from nn.host_pipeline import HostPipeline, pixel_levels
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


@pytest.mark.parametrize("sizes", [*AUGMENTS, (256, 3, 64, 64, 4, True)])
def test_the_augmentation_on_the_gpu_is_the_hosts_bit_for_bit(sizes):
    gpu = load_tier("nvcc")
    n, c, h, w, shift, flip = sizes
    rng = np.random.default_rng(n + h)
    batch = rng.integers(0, 256, (n, c, h, w), dtype=np.uint8)
    normalizer = Normalizer.fit(rng.integers(0, 256, (20, c, h, w), dtype=np.uint8))
    recipe = RECIPE.with_overrides(shift=shift, flip=flip)
    rows, cols, flips = batch_draws(recipe, 1, 2, n)
    out = gpu.from_numpy(np.full((n, c, h, w), np.nan, np.float32))
    stream, done = gpu.Stream(), gpu.Event()
    # numba's copies, which return once done (from_numpy would widen uint8 to int64)
    pixels, chosen = cuda.to_device(batch), cuda.to_device(flips.astype(np.uint8))
    gpu.augment_images(pixels, gpu.from_numpy(rows), gpu.from_numpy(cols), chosen, shift,
                       gpu.from_numpy(pixel_levels(normalizer, c)), out, stream)  # fmt: skip
    done.record(stream)
    done.synchronize()
    expected = normalizer(batch_augmented(batch, recipe, 1, 2))
    assert np.array_equal(gpu.to_numpy(out), expected)


def test_the_pipeline_sends_host_steps_batches_on_the_gpu():
    gpu, data = load_tier("nvcc"), images(shape=COLOUR)
    pipeline = HostPipeline(gpu, data, model(gpu, COLOUR).loss, RECIPE)
    assert pipeline.levels is not None  # augmented on the device
    order = np.random.default_rng(0).permutation(len(data.train))
    pipeline.start_epoch(1, order)
    for index in range(pipeline.batches()):
        chosen = order[index * RECIPE.batch_size :][: RECIPE.batch_size]
        inputs, _, labels = pipeline.batch(index)
        expected = data.normalizer(batch_augmented(data.train.inputs[chosen], RECIPE, 1, index))
        assert np.array_equal(gpu.to_numpy(inputs), expected), index
        assert np.array_equal(gpu.to_numpy(labels), data.train.labels[chosen])
        pipeline.release(index)


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


def one_rank():
    """A communicator of one rank on the nvcc variant (the test skipped without NCCL)."""
    gpu = load_tier("nvcc")
    try:
        identity = nccl.unique_id()
    except RuntimeError as error:
        pytest.skip(str(error))
    from nn.distributed.communicator import NcclCommunicator

    return gpu, NcclCommunicator(gpu, 0, 1, identity)


def test_nccl_with_one_rank_sums_and_broadcasts_in_place():
    gpu, communicator = one_rank()
    values = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    arrays = [gpu.from_numpy(values), gpu.from_numpy(np.arange(5, dtype=np.int64))]
    communicator.all_reduce(arrays)
    communicator.wait()
    communicator.broadcast(arrays)
    assert np.array_equal(gpu.to_numpy(arrays[0]), values)
    assert np.array_equal(gpu.to_numpy(arrays[1]), np.arange(5))
    communicator.close()


def test_a_communicator_is_closed_after_its_block_and_aborted_after_an_exception():
    _, communicator = one_rank()
    with communicator:
        pass
    assert communicator.comm is None
    communicator.close()  # twice: nothing more to free
    _, communicator = one_rank()
    with pytest.raises(KeyError), communicator:
        raise KeyError("a rank's step failed")
    assert communicator.comm is None
