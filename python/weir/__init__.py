"""Weir from Python: load, optimize, run and train static-dataflow-graph models.

    import numpy as np, weir
    session = weir.load("resnet18.onnx", opt_level=3)
    logits = session.run({"input": np.zeros((1, 3, 224, 224), np.float32)})["output"]

Everything here is the C++ runtime (weir._weir, a pybind11 module); errors
raise weir.Error carrying Weir's message. docs/python.md has the whole API
and an example that trains LeNet.
"""

from weir._weir import (
    Error,
    Graph,
    GraphBuilder,
    Optimizer,
    Session,
    Strategy,
    Trainer,
    TrainingStep,
    Var,
    World,
    inspect,
    launched_world,
    load,
    load_graph,
    minimize,
    optimize,
    verify,
)
from weir import data, nn

__version__ = "0.1.0"

__all__ = [
    "Error", "Graph", "GraphBuilder", "Optimizer", "Session", "Strategy", "Trainer", "TrainingStep", "Var",
    "World", "inspect", "launched_world", "load", "load_graph", "minimize", "data", "nn", "optimize", "verify",
]
