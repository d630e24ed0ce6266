"""Dataset readers, returning NumPy arrays (the C++ frontend/data).

    mnist = weir.data.load_fashion_mnist()   # Debian's dataset-fashion-mnist
    mnist["train_images"].shape              # (60000, 1, 28, 28), float32 in [0, 1]
"""

from weir import _weir

__all__ = [name for name in dir(_weir.data) if not name.startswith("_")]
globals().update({name: getattr(_weir.data, name) for name in __all__})
