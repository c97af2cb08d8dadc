"""A classification service for the course's trained models: `python -m nn.serve`.

One concept a file: `app.py` the routes (FastAPI), `batcher.py` dynamic batching on a worker that
owns the tier, `models.py` the checkpoints served, `decoding.py` what a request carries and its
limits, `body.py` the body's size and time limits, `metrics.py` Prometheus metrics, `fronts.py` the
service as N HTTP front processes feeding one batcher's process (`--http-workers N`), `channel.py`
the pipe between a front and that process, `assembly.py` the parts made from the command's
arguments, `__main__.py` the command, `static/` the draw-a-digit page.
"""
