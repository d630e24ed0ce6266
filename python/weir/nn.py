"""Layers and functions for GraphBuilder graphs (the C++ frontend/nn).

    fc = weir.nn.Linear(b, "fc1", 784, 128)
    h = weir.nn.relu(fc(x))
    loss = weir.nn.cross_entropy(logits, labels)
"""

from weir import _weir

__all__ = [name for name in dir(_weir.nn) if not name.startswith("_")]
globals().update({name: getattr(_weir.nn, name) for name in __all__})
