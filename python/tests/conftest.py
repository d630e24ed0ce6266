"""Shared fixtures: the graph-runner binary of this build and small models."""

import os
import subprocess

import numpy as np
import pytest

import weir


@pytest.fixture
def graph_runner():
    path = os.environ.get("WEIR_GRAPH_RUNNER")
    if not path:
        pytest.skip("WEIR_GRAPH_RUNNER is not set (CTest sets it)")
    return path


def run_graph_runner(graph_runner, *args, timeout=300):
    """Runs graph-runner; returns its stdout, failing the test with its output otherwise."""
    done = subprocess.run([graph_runner, *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"graph-runner {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def small_convnet(batch="N", seed=1, training=False):
    """x[batch,3,8,8] -> Conv(8) -> BatchNorm -> Relu -> MaxPool -> Linear(5): 'logits'."""
    b = weir.GraphBuilder("small_convnet", seed=seed)
    x = b.input("x", "f32", [batch, 3, 8, 8])
    conv = weir.nn.Conv2d(b, "conv", in_channels=3, out_channels=8, kernel=3, padding=1)
    norm = weir.nn.BatchNorm2d(b, "norm", 8, training=training)
    h = weir.nn.max_pool2d(weir.nn.relu(norm(conv(x))), kernel=2, stride=2)
    fc = weir.nn.Linear(b, "fc", 8 * 4 * 4, 5)
    b.output(fc(weir.nn.flatten(h)), name="logits")
    return b.finish()


@pytest.fixture
def rng():
    return np.random.default_rng(7)
