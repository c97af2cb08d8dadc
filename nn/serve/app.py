"""The service's routes, on FastAPI: the page, classification, the models, health and metrics.

    GET  /                 the draw-a-digit page (nn/serve/static/)
    POST /classify         ?top_k=3&explain=0&show_input=0&model=NAME&preprocess=mnist|resize
                           &invert=
                           body: a multipart upload field `image` (PNG or JPEG), a raw PNG or JPEG
                           body (Content-Type image/png or image/jpeg), or JSON {"pixels": [[...]]}
                           (H x W floats in [0, 1]; 28x28 is taken as already preprocessed)
    GET  /models           the models loaded: names, classes, input shapes
    GET  /health           503 until every model is loaded and warmed up, then 200
    GET  /metrics          Prometheus text format (nn/serve/metrics.py)
    GET  /docs, /openapi.json   the framework's OpenAPI description

Every refusal is a 4xx with a one-line JSON body {"detail": "..."}; decoding and preprocessing run
in the threadpool, forward passes on the batcher's worker (nn/serve/batcher.py), so the event loop
only moves bytes.
"""

import asyncio
import time
from pathlib import Path

import numpy as np
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from nn.predict import top_classes
from nn.preprocess import METHODS, as_gray_or_rgb, to_model_input
from nn.serve.batcher import (
    ExplainUnavailable,
    ForwardFailed,
    Job,
    QueueFull,
    WorkerStopped,
    settling,
)
from nn.serve.body import BoundedBody
from nn.serve.decoding import BadInput, declared_pixels, decode_image, decode_json_pixels
from nn.serve.metrics import CountRequests

STATIC = Path(__file__).resolve().parent / "static"
RETRY_AFTER_S = 1  # what a 503 asks a client to wait
ROUTES = ("/", "/classify", "/models", "/health", "/metrics", "/docs", "/openapi.json")
IMAGE_TYPES = ("image/png", "image/jpeg")
# A body this small holding at most this many pixels (a 28x28 PNG, a small drawing) is decoded on
# the event loop: cheaper than a thread's round trip, and short (a few bytes of PNG may declare
# millions of pixels: those go to the threadpool).
INLINE_BYTES = 4096
INLINE_PIXELS = 128 * 128
BODY_DOC = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": {"type": "object", "required": ["image"], "properties": {
        "image": {"type": "string", "format": "binary", "description": "PNG or JPEG"}}}},
    "application/json": {"schema": {"type": "object", "required": ["pixels"], "properties": {
        "pixels": {"type": "array", "items": {"type": "array", "items": {"type": "number"}},
                   "description": "H rows of W floats in [0, 1]"}}}},
    "image/png": {"schema": {"type": "string", "format": "binary"}},
    "image/jpeg": {"schema": {"type": "string", "format": "binary"}},
}}}  # fmt: skip


def create_app(served, batcher, metrics, tier_name, body_timeout_s, max_body_bytes,
               request_timeout_s=30.0):
    """The app serving the ServedModels `served` through `batcher` (started and stopped with the
    app), counting into `metrics`."""
    by_name = {model.name: model for model in served}

    app = FastAPI(title="scratch2cuda classifier", summary="The course's trained models, served: "
                  "top-K classes of a digit, with dynamic batching")  # fmt: skip
    app.add_middleware(BoundedBody, max_bytes=max_body_bytes, timeout_s=body_timeout_s)
    app.add_middleware(CountRequests, metrics=metrics, routes=ROUTES)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(BadInput)
    async def bad_input(request, error):
        return JSONResponse({"detail": str(error)}, error.status)

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request, error):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "request"
        return JSONResponse({"detail": f"{where}: {first['msg']}"}, 422)

    def not_ready():
        message = ("the service failed to start: " + str(batcher.failure)) if batcher.failure \
            else "the models are still loading"
        return JSONResponse({"detail": message}, 503, headers={"Retry-After": str(RETRY_AFTER_S)})

    @app.get("/", include_in_schema=False)
    async def page():
        return FileResponse(STATIC / "index.html")

    @app.get("/health", summary="200 once every model is loaded and warmed up, 503 before")
    async def health():
        if not batcher.ready.is_set():
            return not_ready()
        if not batcher.alive():
            return JSONResponse({"detail": "the worker has stopped"}, 503)
        return {"status": "ready", "models": list(by_name), "queue_depth": batcher.depth()}

    @app.get("/models", summary="The models loaded: names, classes, input shapes")
    async def models():
        return {"models": [model.describe() for model in served], "default": served[0].name,
                "tier": tier_name}  # fmt: skip

    @app.get("/metrics", summary="Prometheus metrics", include_in_schema=False)
    async def prometheus():
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/classify", summary="The top-K classes of an image", openapi_extra=BODY_DOC)
    async def classify(
        request: Request,
        top_k: int = Query(3, ge=1, description="how many classes to return"),
        explain: bool = Query(False, description="add the Grad-CAM heatmap of the top class"),
        show_input: bool = Query(False, description="add the network's input, the image as "
                                 "preprocessed: 784 numbers for MNIST"),
        model: str | None = Query(None, description="a name from /models (default: the first)"),
        preprocess: str = Query("mnist", pattern=f"^({'|'.join(METHODS)})$",
                                description="crop and centre as MNIST (mnist), or plain resize"),
        invert: bool | None = Query(None, description="dark ink on light (default: detected)"),
    ):
        start = time.perf_counter()
        chosen = by_name.get(served[0].name if model is None else model)
        if chosen is None:
            return JSONResponse({"detail": f"no model {model!r}: the models are "
                                           f"{list(by_name)}"}, 404)  # fmt: skip
        if not batcher.ready.is_set():
            return not_ready()
        grad_cam = explainer() if explain else None
        if isinstance(grad_cam, JSONResponse):
            return grad_cam
        image = await read_image(request, chosen.input_shape, preprocess, invert)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        try:
            batcher.submit(Job(chosen, image, grad_cam, settling(future, loop)))
            result = await asyncio.wait_for(future, request_timeout_s)
        except QueueFull:  # at once here, or from the batcher's process (nn/serve/fronts.py)
            return JSONResponse({"detail": "the service is busy: its queue is full, retry"}, 503,
                                headers={"Retry-After": str(RETRY_AFTER_S)})  # fmt: skip
        except WorkerStopped as error:
            return JSONResponse({"detail": str(error)}, 503)
        except ExplainUnavailable as error:
            return JSONResponse({"detail": str(error)}, 501)
        except ForwardFailed as error:
            return JSONResponse({"detail": str(error)}, 500)
        except TimeoutError:
            return JSONResponse({"detail": f"no answer within {request_timeout_s:g} s"}, 504)
        return answer(chosen, tier_name, image if show_input else None, result, top_k, start)

    return app


def explainer():
    """nn.explain.grad_cam, or a 501 response when it is not there."""
    try:
        from nn.explain import grad_cam
    except ImportError as error:
        return JSONResponse({"detail": f"explain=1 is not available: Grad-CAM (nn.explain) "
                                       f"cannot be imported ({error})"}, 501)  # fmt: skip
    return grad_cam


async def read_image(request, input_shape, preprocess, invert):
    """float32 [C, H, W] in [0, 1], the network's input (nn/preprocess.py), from the request's
    body; decoded and preprocessed on the event loop when the body is small (a thread's round
    trip would cost more), else in the threadpool."""
    body = await request.body()  # bounded in size and time by BoundedBody
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not body:
        raise BadInput("the request body is empty: send an image or JSON pixels")
    if kind == "multipart/form-data":
        async with request.form(max_files=1, max_fields=1) as form:
            upload = form.get("image")
            if upload is None or isinstance(upload, str):
                raise BadInput("the multipart body must hold a file field named 'image'")
            body = await upload.read()
    elif kind not in (*IMAGE_TYPES, "application/json"):
        raise BadInput(f"Content-Type {kind or 'missing'}: send multipart/form-data (field "
                       f"'image'), {' or '.join(IMAGE_TYPES)}, or application/json", 415)

    def decoded():
        if kind == "application/json":
            pixels = decode_json_pixels(body)
        else:
            pixels = decode_image(body, lambda image: as_gray_or_rgb(image, input_shape[0]))
        return to_model_input(pixels, input_shape, preprocess, invert)

    small = len(body) <= INLINE_BYTES and (
        kind == "application/json" or declared_pixels(body) <= INLINE_PIXELS)
    return decoded() if small else await run_in_threadpool(decoded)


def answer(served, tier_name, image, result, top_k, start):
    """The JSON answer to a classification, with the network's input `image` [C, H, W] when not
    None (a JSONResponse: FastAPI's own encoder would walk its numbers one by one; encoding them
    at all costs more than the rest of a small request, so only the page asks for them)."""
    order = top_classes(result.probabilities, top_k)
    reply = {
        "model": served.name, "tier": tier_name, "checkpoint": str(served.checkpoint),
        "top": [{"index": int(i), "class": served.class_names[i],
                 "probability": float(result.probabilities[i])} for i in order],
        "milliseconds": round((time.perf_counter() - start) * 1000, 3),
        "batch_size": result.batch_size,
    }  # fmt: skip
    if image is not None:
        shown = image[0] if image.shape[0] == 1 else image.transpose(1, 2, 0)
        reply["input"] = np.round(shown, 4).tolist()
    if result.heatmap is not None:
        reply["heatmap"] = np.round(result.heatmap, 4).tolist()
    return JSONResponse(reply)
