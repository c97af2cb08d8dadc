"""The network, written once over the op contract: layers, models, optimizers, schedules, trainer.

`nn` never computes on arrays itself: every layer and optimizer calls the ops of the tier it is
handed (`nn.tiers.load_tier(stage)`), so the same model trains on pure Python, NumPy, C or CUDA.
Entry points: `python -m nn.train`, `python -m nn.predict`, `python -m nn.bench`.
"""
