"""weir.load and weir.Session: every model format, outputs equal to graph-runner run's, no copies, errors."""

import os
import threading
import time

import numpy as np
import pytest

import weir
from conftest import run_graph_runner, small_convnet


@pytest.fixture
def model_files(tmp_path):
    graph = small_convnet()
    files = {ext: tmp_path / f"model{ext}" for ext in (".weir", ".weirtxt", ".onnx")}
    graph.save(files[".weir"])
    graph.save(files[".weirtxt"])
    graph.export_onnx(str(files[".onnx"]))
    files[".weirplan"] = tmp_path / "model.weirplan"
    weir.optimize(str(files[".weir"]), str(files[".weirplan"]), opt_level=3)
    return files


def test_every_format_gives_graph_runners_outputs(model_files, graph_runner, tmp_path, rng):
    x = rng.standard_normal((2, 3, 8, 8), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    for ext, path in model_files.items():
        out_dir = tmp_path / f"out{ext}"
        run_graph_runner(graph_runner, "run", str(path), "-i", f"x={tmp_path / 'x.npy'}", "-o", str(out_dir))
        expected = np.load(out_dir / "logits.npy")
        session = weir.load(str(path), opt_level=3)
        assert session.input_names == ["x"]
        assert session.output_names == ["logits"]
        got = session.run({"x": x})["logits"]
        assert got.shape == (2, 5) and got.dtype == np.float32
        np.testing.assert_array_equal(got, expected, err_msg=f"{ext}")


def test_opt_levels_agree_with_the_unoptimized_graph(model_files, rng):
    x = rng.standard_normal((4, 3, 8, 8), dtype=np.float32)
    reference = weir.load(str(model_files[".weir"]), opt_level=0).run({"x": x})["logits"]
    for level in (1, 2, 3):
        got = weir.load(str(model_files[".onnx"]), opt_level=level).run({"x": x})["logits"]
        np.testing.assert_allclose(got, reference, rtol=1e-5, atol=1e-5)


def test_outputs_are_views_of_weirs_memory_and_outlive_the_session(model_files, rng):
    session = weir.load(str(model_files[".weir"]))
    x = rng.standard_normal((1, 3, 8, 8), dtype=np.float32)
    out = session.run({"x": x})["logits"]
    assert not out.flags["OWNDATA"]  # a view over the result tensor, not a copy
    assert out.base is not None
    expected = out.copy()
    del session
    np.testing.assert_array_equal(out, expected)


def test_non_contiguous_feeds_are_read_correctly(model_files, rng):
    session = weir.load(str(model_files[".weir"]))
    big = rng.standard_normal((2, 3, 8, 16), dtype=np.float32)
    strided = big[:, :, :, ::2]  # not C-contiguous: copied first
    np.testing.assert_array_equal(session.run({"x": strided})["logits"],
                                  session.run({"x": np.ascontiguousarray(strided)})["logits"])


def test_errors_raise_weir_error_with_weirs_message(model_files, tmp_path):
    with pytest.raises(weir.Error, match="no such model file") as missing:
        weir.load(str(tmp_path / "missing.onnx"))
    assert missing.value.kind == "I/O error" and "missing.onnx" in str(missing.value)
    session = weir.load(str(model_files[".weir"]))
    with pytest.raises(weir.Error, match="feed 'x'") as shape:
        session.run({"x": np.zeros((1, 3, 7, 7), np.float32)})
    assert isinstance(shape.value, RuntimeError)
    with pytest.raises(weir.Error, match="'x'"):
        session.run({"x": np.zeros((1, 3, 8, 8), np.complex64)})
    with pytest.raises(weir.Error, match="graph input 'x' is not fed"):
        session.run({})
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises(weir.Error, match="bad.onnx"):
        weir.load(str(bad))
    with pytest.raises(weir.Error, match="opt_level"):
        weir.load(str(model_files[".weir"]), opt_level=7)


def test_builder_errors_name_the_failed_call():
    b = weir.GraphBuilder("broken")
    x = b.input("x", "f32", [2, 3])
    w = b.parameter("w", np.ones((4, 5), np.float32))
    b.output(weir.nn.matmul(x, w))
    with pytest.raises(weir.Error, match="MatMul"):
        b.finish()


def test_the_gil_is_released_while_a_model_runs(rng):
    # A model that runs for a good part of a second on two cores.
    b = weir.GraphBuilder("matmuls", seed=3)
    x = b.input("x", "f32", [2048, 2048])
    h = x
    for i in range(8):
        h = weir.nn.relu(weir.nn.Linear(b, f"fc{i}", 2048, 2048)(h))
    b.output(h, name="y")
    session = weir.Session(b.finish())
    feed = {"x": rng.standard_normal((2048, 2048), dtype=np.float32)}
    started = threading.Event()
    times = {}

    def run():
        started.set()
        times["begin"] = time.perf_counter()
        session.run(feed)
        times["end"] = time.perf_counter()

    runner = threading.Thread(target=run)
    runner.start()
    started.wait()
    time.sleep(0.01)  # the runner is inside run() by now
    # This line runs while the other thread is inside run() only if run()
    # gave up the GIL; holding it, this thread would wait until run() returns.
    here = time.perf_counter()
    runner.join()
    duration = times["end"] - times["begin"]
    assert duration > 0.1, f"the model ran in {duration:.3f} s, too short to tell"
    assert times["end"] - here > duration / 2, (times, here)


def test_sessions_run_from_several_threads_at_once(model_files, rng):
    session = weir.load(str(model_files[".weir"]))
    xs = [rng.standard_normal((3, 3, 8, 8), dtype=np.float32) for _ in range(4)]
    expected = [session.run({"x": x})["logits"] for x in xs]
    results = [None] * 4

    def worker(i):
        for _ in range(20):
            results[i] = session.run({"x": xs[i]})["logits"]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)


def test_sequences_and_optionals_are_lists_and_none():
    """ONNX's test_sequence_insert_at_back: a list feeds the sequence input and
    the sequence output comes back as a list of arrays; an absent optional
    (test_optional_has_element_empty) is fed as None."""
    node = "/usr/share/libonnx-testdata/data/node/"
    if not os.path.isdir(node + "test_sequence_insert_at_back"):
        pytest.skip("libonnx-testdata is not installed")
    session = weir.load(node + "test_sequence_insert_at_back/model.onnx")
    items = [np.array([1, 2, 3], dtype=np.int64), np.array([4, 5], dtype=np.int64)]
    out = session.run({"sequence": items, "tensor": np.array([7, 8, 9], dtype=np.int64)})
    result = out["output_sequence"]
    assert isinstance(result, list) and len(result) == 3
    for got, expected in zip(result, items + [np.array([7, 8, 9])]):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(weir.Error, match="give a list of arrays"):
        session.run({"sequence": items[0], "tensor": np.array([7, 8, 9], dtype=np.int64)})

    empty = weir.load(node + "test_optional_has_element_empty/model.onnx")
    name = empty.input_names[0]
    assert not empty.run({name: None})["output"]
    assert empty.run({name: np.array(1, dtype=np.int32)})["output"]
