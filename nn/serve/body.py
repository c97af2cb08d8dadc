"""The request body, bounded in size and in time: an ASGI middleware in front of the routes.

A body larger than `max_bytes` is answered 413 (from its Content-Length at once, or as soon as a
chunked body grows past it, without reading the rest), and a client that sends its body slower than
one part per `timeout_s` is answered 408: a slow client holds one connection, never the worker or
the memory of the process. (Uvicorn itself closes idle keep-alive connections, and refuses more
than its `limit_concurrency` connections at once with a 503.) The refusals are BadInputs, raised
where the route reads the body and answered by the app's handler of BadInput.
"""

import asyncio

from starlette.responses import JSONResponse

from nn.serve.decoding import BadInput


class BoundedBody:
    def __init__(self, app, max_bytes, timeout_s):
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            status = 413 if declared.isdigit() else 400
            message = self.too_large() if declared.isdigit() else "Content-Length must be a number"
            response = JSONResponse({"detail": message}, status, headers={"connection": "close"})
            return await response(scope, receive, send)
        received = 0

        async def bounded_receive():
            nonlocal received
            try:
                message = await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                raise BadInput(f"the request body did not arrive within {self.timeout_s:g} s of "
                               "its last part", 408) from None  # fmt: skip
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise BadInput(self.too_large(), 413)
            return message

        await self.app(scope, bounded_receive, send)

    def too_large(self):
        return f"the request body is over the limit of {self.max_bytes} bytes"
