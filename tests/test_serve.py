"""The service (nn/serve/) over real HTTP on loopback, in one process and as 2 HTTP fronts feeding
a batcher's process (--http-workers 2): every kind of bad input answered with a 4xx and a one-line
message, the service still healthy after each; a digit's answer the same as nn.predict's;
concurrent requests sharing forward passes, each answer its own image's forward pass; the
metrics, the models, the OpenAPI description and the command's own refusals. A full queue answered
503 is shown in process (the app on httpx's ASGI transport), its worker held mid-pass so that the
queue fills for certain."""

import asyncio
import importlib.util
import socket
import struct
import sys
import threading
import time
import zlib

import httpx
import numpy as np
import pytest
from serving import CLASSES, HeldModel, drawn_seven, lenet5_checkpoint, png

from nn import exits, predict
from nn.preprocess import as_gray_or_rgb, to_model_input
from nn.quantize import quantize_checkpoint
from nn.serve import __main__ as serve_command
from nn.serve.app import create_app
from nn.serve.batcher import Batcher, ForwardFailed, Job
from nn.serve.decoding import MAX_BODY_BYTES, decode_image
from nn.serve.launch import running_service
from nn.serve.metrics import Metrics
from nn.serve.models import read_served

BODY_TIMEOUT_S = 1


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return lenet5_checkpoint(tmp_path_factory.mktemp("serve") / "lenet5.npz")


@pytest.fixture(scope="module", params=[1, 2], ids=["one process", "2 HTTP fronts"])
def service(checkpoint, request):
    """The service on stage 2, waiting up to 100 ms for a batch to fill (so that concurrent
    requests surely share one), a stalled body refused after BODY_TIMEOUT_S: in one process, and
    as 2 HTTP fronts feeding a batcher's process (nn/serve/fronts.py)."""
    flags = ["--checkpoint", str(checkpoint), "--checkpoint", str(checkpoint), "--stage", "2",
             "--max-wait-ms", "100", "--body-timeout-s", str(BODY_TIMEOUT_S),
             "--http-workers", str(request.param)]  # fmt: skip
    with running_service(flags) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def png_declaring(width, height):
    """A valid-looking PNG whose header declares width x height pixels it does not hold."""

    def chunk(kind, data):
        checksum = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + checksum

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + chunk(b"IEND", b""))  # fmt: skip


GOOD = png(np.zeros((64, 64)))
PIXEL_ROWS = b",".join([b"[" + b",".join([b"0.5"] * 10) + b"]"] * 10)


def upload(data, field="image"):
    return {"files": {field: ("digit.png", data, "image/png")}}


def raw(data, kind):
    return {"content": data, "headers": {"content-type": kind}}


BAD_INPUTS = {  # name: (request keywords, status, a piece of the message)
    "empty body": (raw(b"", "image/png"), 400, "the request body is empty"),
    "empty upload": (upload(b""), 400, "the image is empty"),
    "not an image": (upload(b"hello, this is text"), 400, "not a PNG or JPEG image"),
    "a GIF": (upload(b"GIF89a" + b"\0" * 40), 400, "not a PNG or JPEG image"),
    "truncated PNG": (upload(GOOD[:len(GOOD) // 2]), 400, "cannot be decoded"),
    "decompression bomb": (upload(png_declaring(100_000, 100_000)), 413, "exceeds limit"),
    "side over the limit": (upload(png_declaring(5000, 400)), 413, "at most 4096 a side"),
    "1x1 image": (upload(png(np.zeros((1, 1)))), 400, "each side must be at least 8"),
    "100000x1 image": (upload(png(np.zeros((1, 100_000)))), 400, "each side must be at least"),
    "2000x10 strip": (upload(png(np.zeros((10, 2000)))), 400, "more than 16 times the other"),
    "no image field": (upload(GOOD, field="picture"), 400, "a file field named 'image'"),
    "broken multipart": (raw(b"--xx\r\nbroken", "multipart/form-data; boundary=xx"), 400, ""),
    "unknown content type": (raw(b"abc", "text/plain"), 415, "Content-Type text/plain"),
    "not JSON": (raw(b"{pixels", "application/json"), 400, "the body is not JSON"),
    "JSON list": (raw(b"[1, 2]", "application/json"), 400, '{"pixels": [[...], ...]}'),
    "flat pixels": (raw(b'{"pixels": [1, 2, 3]}', "application/json"), 400, "a list of rows"),
    "ragged rows": (raw(b'{"pixels": [[0, 0], [0]]}', "application/json"), 400, "as many numbers"),
    "strings": (raw(b'{"pixels": [' + b",".join([b'["a","b","c","d","e","f","g","h"]'] * 8)
                    + b"]}", "application/json"), 400, "every value must be a number"),
    "NaN pixels": (raw(b'{"pixels": [' + PIXEL_ROWS.replace(b"0.5", b"NaN", 1) + b"]}",
                       "application/json"), 400, "NaN or Inf"),
    "Infinity pixels": (raw(b'{"pixels": [' + PIXEL_ROWS.replace(b"0.5", b"-Infinity", 3)
                            + b"]}", "application/json"), 400, "NaN or Inf"),
    "out of range": (raw(b'{"pixels": [' + PIXEL_ROWS.replace(b"0.5", b"255", 1) + b"]}",
                         "application/json"), 400, "values must be in [0, 1]"),
    "nested too deep": (raw(b'{"pixels": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                            "application/json"), 400, "nested too deeply"),
    "body over the limit": (raw(b"0" * (MAX_BODY_BYTES + 1), "image/png"), 413, "over the limit"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_is_a_4xx_with_a_one_line_message(service, name):
    request, status, message = BAD_INPUTS[name]
    reply = service.post("/classify", **request)
    assert reply.status_code == status, reply.text
    detail = reply.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and message in detail
    assert service.get("/health").status_code == 200


def test_a_chunked_body_over_the_limit_is_refused_without_reading_it_all(service):
    def chunks():
        for _ in range(64):
            yield b"0" * (MAX_BODY_BYTES // 16)

    reply = service.post("/classify", content=chunks(), headers={"content-type": "image/png"})
    assert reply.status_code == 413 and "over the limit" in reply.json()["detail"]
    assert service.get("/health").status_code == 200


@pytest.mark.parametrize(("query", "status", "message"), [
    ("model=nope", 404, "no model 'nope'"),
    ("top_k=0", 422, "top_k: Input should be greater than or equal to 1"),
    ("top_k=three", 422, "top_k: Input should be a valid integer"),
    ("preprocess=blur", 422, "preprocess: String should match"),
    ("explain=maybe", 422, "explain: Input should be a valid boolean"),
])  # fmt: skip
def test_bad_parameters_are_a_4xx_naming_the_parameter(service, query, status, message):
    reply = service.post(f"/classify?{query}", **upload(GOOD))
    assert reply.status_code == status and message in reply.json()["detail"], reply.text


def test_a_slow_client_is_answered_408_and_holds_nothing_else(service):
    host, port = service.base_url.host, service.base_url.port
    with socket.create_connection((host, port), timeout=10) as slow:
        slow.sendall(b"POST /classify HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
                     b"Content-Length: 1000\r\n\r\n" + GOOD[:10])  # fmt: skip
        assert service.get("/health").status_code == 200  # others are served meanwhile
        start = time.monotonic()
        answer = b""
        while b"}" not in answer:  # the headers and the JSON body may come in two parts
            part = slow.recv(4096)
            if not part:
                break
            answer += part
    assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive within" in answer
    assert time.monotonic() - start < BODY_TIMEOUT_S + 5
    assert service.get("/health").status_code == 200


def test_a_digit_gets_the_answer_nn_predict_gives(service, checkpoint, tmp_path, capsys):
    image = drawn_seven()
    path = tmp_path / "seven.png"
    path.write_bytes(png(image))
    assert "input" not in service.post("/classify", **upload(path.read_bytes())).json()
    reply = service.post("/classify?top_k=10&show_input=1", **upload(path.read_bytes()))
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["model"] == "lenet5-mnist" and answer["tier"] == "stage 2"
    assert answer["checkpoint"] == str(checkpoint) and answer["batch_size"] >= 1
    assert answer["milliseconds"] > 0 and "heatmap" not in answer
    top = answer["top"]
    assert [entry["class"] for entry in top] == [CLASSES[entry["index"]] for entry in top]
    assert sum(entry["probability"] for entry in top) == pytest.approx(1, abs=1e-4)
    expected_input = to_model_input(image / np.float32(255), (1, 28, 28))[0]
    np.testing.assert_allclose(answer["input"], expected_input, atol=1e-4)

    assert predict.main(["--checkpoint", str(checkpoint), str(path), "--top-k", "1"]) == 0
    predicted = capsys.readouterr().out.split()
    assert predicted[1] == top[0]["class"]
    assert float(predicted[2]) == pytest.approx(top[0]["probability"], abs=1e-4)


def test_an_int8_checkpoint_is_served_as_nn_predict_runs_it(checkpoint, shared_data_dir, tmp_path,
                                                            capsys):
    int8 = tmp_path / "lenet5-int8.npz"
    quantize_checkpoint(checkpoint, int8, 64, "minmax", 2, data_dir=shared_data_dir)
    path = tmp_path / "seven.png"
    path.write_bytes(png(drawn_seven()))
    with running_service(["--checkpoint", str(int8), "--stage", "2"]) as url:
        assert httpx.get(f"{url}/models").json()["models"][0]["int8"] is True
        answer = httpx.post(f"{url}/classify?top_k=1", **upload(path.read_bytes())).json()
    assert answer["model"] == "lenet5-mnist-int8"
    assert predict.main(["--checkpoint", str(int8), str(path), "--top-k", "1"]) == 0
    predicted = capsys.readouterr().out.split()
    assert predicted[1] == answer["top"][0]["class"]
    assert float(predicted[2]) == pytest.approx(answer["top"][0]["probability"], abs=1e-4)


def test_json_pixels_and_a_raw_png_body_are_classified_alike(service):
    image = drawn_seven(96)
    by_json = service.post("/classify?show_input=1", json={"pixels": (image / 255).tolist()}).json()
    by_png = service.post("/classify?show_input=1", **raw(png(image), "image/png")).json()
    assert by_json["top"][0]["index"] == by_png["top"][0]["index"]
    np.testing.assert_allclose(by_json["input"], by_png["input"], atol=1e-3)


def test_concurrent_requests_share_forward_passes(service):
    bodies = [png(np.roll(drawn_seven(), shift, axis=1)) for shift in range(16)]

    async def send_all():
        async with httpx.AsyncClient(base_url=service.base_url, timeout=30) as client:
            return await asyncio.gather(*(client.post("/classify", **upload(body))
                                          for body in bodies))  # fmt: skip

    replies = asyncio.run(send_all())
    assert all(reply.status_code == 200 for reply in replies)
    assert max(reply.json()["batch_size"] for reply in replies) > 1
    metrics = service.get("/metrics").text
    assert "s2c_batch_size_bucket" in metrics and "s2c_queue_depth" in metrics


def test_every_answer_is_the_forward_pass_of_its_own_image(service, checkpoint):
    """Concurrent requests ride in shared batches (across HTTP fronts too), and each answer's ten
    probabilities are still its own image's, as this process computes them alone."""
    import stage2_numpy

    rng = np.random.default_rng()
    bodies = [png(rng.integers(0, 256, (28, 28))) for _ in range(16)]  # no two alike

    async def send_all():
        async with httpx.AsyncClient(base_url=service.base_url, timeout=30) as client:
            return await asyncio.gather(*(client.post("/classify?top_k=10", **upload(body))
                                          for body in bodies))  # fmt: skip

    replies = asyncio.run(send_all())
    [served] = read_served([checkpoint])
    served.load(stage2_numpy)
    for body, reply in zip(bodies, replies, strict=True):
        assert reply.status_code == 200, reply.text
        answered = np.full(10, np.nan)
        for entry in reply.json()["top"]:
            answered[entry["index"]] = entry["probability"]
        pixels = decode_image(body, lambda image: as_gray_or_rgb(image, 1))
        alone = served.probabilities(to_model_input(pixels, (1, 28, 28))[None])[0]
        np.testing.assert_allclose(answered, alone, rtol=1e-5, atol=1e-7)
    assert max(reply.json()["batch_size"] for reply in replies) > 1


def test_models_metrics_and_openapi_describe_the_service(service):
    models = service.get("/models").json()
    assert [model["name"] for model in models["models"]] == ["lenet5-mnist", "lenet5-mnist-2"]
    assert models["models"][0]["classes"] == CLASSES
    assert models["models"][0]["input_shape"] == [1, 28, 28]
    second = service.post("/classify?model=lenet5-mnist-2", **upload(GOOD))
    assert second.status_code == 200 and second.json()["model"] == "lenet5-mnist-2"
    service.post("/classify", **upload(b"not an image"))
    metrics = service.get("/metrics").text
    assert 's2c_requests_total{route="/classify",status="400"}' in metrics
    assert 's2c_requests_total{route="/classify",status="200"}' in metrics
    assert "s2c_request_seconds_bucket" in metrics
    service.get("/no/such/path")
    assert 's2c_requests_total{route="other",status="404"}' in service.get("/metrics").text
    assert "/classify" in service.get("/openapi.json").json()["paths"]
    assert service.get("/docs").status_code == 200


def test_explain_gives_a_heatmap_or_says_why_not(service):
    reply = service.post("/classify?explain=1", **upload(png(drawn_seven())))
    if importlib.util.find_spec("nn.explain") is None:
        assert reply.status_code == 501
        assert "explain=1 is not available" in reply.json()["detail"]
    else:
        assert reply.status_code == 200, reply.text
        heatmap = np.array(reply.json()["heatmap"])
        assert heatmap.shape == (28, 28) and heatmap.min() >= 0 and heatmap.max() <= 1


def in_process(served, tier, max_batch=1, queue_size=4):
    """(app, its started batcher) over `served`, for httpx's ASGI transport: stop the batcher."""
    metrics = Metrics(max_batch, lambda: batcher.depth())
    batcher = Batcher(served, tier, max_batch=max_batch, max_wait_s=0, queue_size=queue_size,
                      batch_sizes=metrics.batch_size)  # fmt: skip
    batcher.start(on_failure=print)
    assert batcher.ready.wait(30)
    return create_app(served, batcher, metrics, "a tier", 5, MAX_BODY_BYTES), batcher


def test_a_full_queue_is_answered_503_with_retry_after():
    held = HeldModel()
    app, batcher = in_process([held], object, queue_size=1)

    async def three_requests():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://held") as client:
            def send():
                return asyncio.create_task(client.post("/classify", **upload(GOOD)))

            running = send()  # taken by the worker, which holds it
            await asyncio.to_thread(held.entered.wait, 10)
            waiting = send()  # fills the queue of 1
            while batcher.depth() < 1:
                await asyncio.sleep(0.01)
            refused = await send()
            held.release.set()
            return await running, await waiting, refused

    try:
        running, waiting, refused = asyncio.run(three_requests())
    finally:
        held.release.set()
        batcher.stop()
    assert running.status_code == waiting.status_code == 200
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert "queue is full" in refused.json()["detail"]


class FailingOnceModel(HeldModel):
    """A stand-in whose first forward pass after the warm-up raises."""

    def probabilities(self, images):
        self.passes += 1
        if self.passes == 2:
            raise RuntimeError("out of device memory\n(a second line)")
        return np.full((len(images), 10), 0.1)


def test_a_failing_forward_pass_fails_its_requests_not_the_worker():
    failing = FailingOnceModel()
    app, batcher = in_process([failing], object)

    async def two_requests_then_health():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://failing") as client:
            first = await client.post("/classify", **upload(GOOD))
            second = await client.post("/classify", **upload(GOOD))
            return first, second, await client.get("/health")

    try:
        first, second, health = asyncio.run(two_requests_then_health())
    finally:
        batcher.stop()
    assert first.status_code == 500
    assert first.json()["detail"] == ("the forward pass of model held failed: RuntimeError: out "
                                      "of device memory")  # fmt: skip
    assert second.status_code == 200 and health.status_code == 200


def test_a_failure_after_the_forward_pass_answers_its_requests_at_once_and_the_worker_goes_on():
    """A metric that raises once (past the forward pass, outside run's own guard): the pass's
    requests get a 500 naming it, not a wait for the service's timeout, each answered once, and
    the next request is served."""

    class FailingOnceMetric:
        def __init__(self):
            self.calls = 0

        def observe(self, size):
            self.calls += 1
            if self.calls == 1:  # the first request's pass (the warm-up is not counted)
                raise ValueError("histogram bucket missing")

    served = [HeldModel()]
    served[0].release.set()
    batcher = Batcher(served, object, max_batch=1, max_wait_s=0, queue_size=4,
                      batch_sizes=FailingOnceMetric())  # fmt: skip
    batcher.start(on_failure=print)
    assert batcher.ready.wait(30)
    answers = {0: [], 1: []}
    try:
        for number in answers:
            done = threading.Event()

            def reply(result=None, error=None, number=number, done=done):
                answers[number].append(error or result)
                done.set()

            batcher.submit(Job(served[0], np.zeros((1, 28, 28), np.float32), None, reply))
            assert done.wait(10), f"request {number} got no answer"
    finally:
        batcher.stop()
    assert len(answers[0]) == 1 and isinstance(answers[0][0], ForwardFailed)
    assert str(answers[0][0]) == "serving a batch failed: ValueError: histogram bucket missing"
    assert len(answers[1]) == 1 and answers[1][0].batch_size == 1


def test_the_command_refuses_a_bad_checkpoint_in_one_line(tmp_path, capsys):
    missing = tmp_path / "none.npz"
    assert serve_command.main(["--checkpoint", str(missing)]) == exits.CHECKPOINT
    assert capsys.readouterr().err == f"error: checkpoint {missing} does not exist\n"
    with pytest.raises(SystemExit):
        serve_command.main(["--checkpoint", str(missing), "--max-batch", "0"])


def test_explain_hands_grad_cam_the_model_the_normalized_images_and_the_top_classes(
        checkpoint, monkeypatch):
    """The service's side of Grad-CAM, whatever nn.explain computes: a stand-in grad_cam sees
    the evaluation-mode model, the batch as the network's normalized input [N, 1, 28, 28] and
    each request's top class, and its heatmap comes back in the answer."""
    import types

    import stage2_numpy

    calls = []

    def grad_cam(model, images, class_indices, layer=None):
        calls.append((model, np.array(images), np.array(class_indices)))
        return np.full((len(images), 28, 28), 0.25, np.float32)

    monkeypatch.setitem(sys.modules, "nn.explain", types.SimpleNamespace(grad_cam=grad_cam))
    served = read_served([checkpoint])
    app, batcher = in_process(served, lambda: stage2_numpy, max_batch=4)
    image = drawn_seven()

    async def explained():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://explain") as client:
            return await client.post("/classify?explain=1", **upload(png(image)))

    try:
        reply = asyncio.run(explained())
    finally:
        batcher.stop()
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert np.array(answer["heatmap"]).shape == (28, 28) and answer["heatmap"][0][0] == 0.25
    [(model, images, classes)] = calls
    assert model is served[0].model and images.shape == (1, 1, 28, 28)
    expected = served[0].normalizer(to_model_input(image / 255, (1, 28, 28))[None] * 255)
    np.testing.assert_allclose(images, expected, atol=1e-5)
    assert classes.tolist() == [answer["top"][0]["index"]]
