"""A classification service for the course's trained models: `python -m nn.serve`.

One concept a file: `app.py` the routes (FastAPI), `batcher.py` dynamic batching on a worker that
owns the tier, `models.py` the checkpoints served, `decoding.py` what a request carries and its
limits, `body.py` the body's size and time limits, `metrics.py` Prometheus metrics, `__main__.py`
the command, `static/` the draw-a-digit page.
"""
