"""examples/python/train_lenet.py, the example docs/python.md shows, runs and learns."""

import os
import re
import subprocess
import sys

import pytest

import weir


def test_the_lenet_example_trains_saves_and_runs_the_saved_model(tmp_path):
    source = os.environ.get("WEIR_SOURCE_DIR")
    if not source:
        pytest.skip("WEIR_SOURCE_DIR is not set (CTest sets it)")
    if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
        pytest.skip("no Fashion-MNIST (scripts/setup.sh installs dataset-fashion-mnist)")
    done = subprocess.run([sys.executable, os.path.join(source, "examples/python/train_lenet.py"), "--out",
                           str(tmp_path), "--steps", "60", "--test-examples", "2000"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    accuracy = float(re.search(r"test_accuracy: ([0-9.]+)", done.stdout).group(1))
    assert accuracy > 0.6, done.stdout  # 60 Adam steps; one epoch reaches about 0.88
    session = weir.load(str(tmp_path / "lenet.weir"))
    assert session.inputs == [("x", "f32[N,1,28,28]")]
    assert (tmp_path / "checkpoint.npz").exists()


def test_fashion_mnist_loads_as_arrays():
    if not os.path.exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"):
        pytest.skip("no Fashion-MNIST")
    labels = weir.data.read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
    assert labels.shape == (10000,) and labels.dtype.name == "uint8" and labels.max() == 9
    with pytest.raises(weir.Error, match="nowhere"):
        weir.data.read_idx("/nowhere/x.gz")
