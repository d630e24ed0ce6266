"""weir.optimize, weir.verify and weir.inspect, against what graph-runner's subcommands say."""

import re

import numpy as np
import pytest

import weir
from conftest import run_graph_runner, small_convnet


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "convnet.weir"
    small_convnet().save(path)
    return path


def test_optimize_writes_every_format_and_keeps_the_outputs(model, tmp_path, rng):
    x = rng.standard_normal((2, 3, 8, 8), dtype=np.float32)
    reference = weir.load(str(model), opt_level=0).run({"x": x})["logits"]
    for ext in (".weir", ".weirtxt", ".weirplan"):
        out = tmp_path / f"optimized{ext}"
        result = weir.optimize(str(model), str(out), opt_level=3)
        assert out.exists()
        assert result["nodes_after"] < result["nodes_before"]  # BatchNorm folded into the Conv at least
        np.testing.assert_allclose(weir.load(str(out)).run({"x": x})["logits"], reference, rtol=1e-5, atol=1e-5)


def test_verify_reports_every_pass(model, graph_runner):
    report = weir.verify(str(model), tolerance=1e-4)
    assert report["ok"] and report["first_broken"] is None
    changed = [p for p in report["passes"] if p["changed"]]
    assert changed, report
    assert all(p["max_abs_diff"] <= 1e-4 for p in changed)
    printed = run_graph_runner(graph_runner, "verify", str(model))
    assert [p["pass"] for p in report["passes"]] == re.findall(r"^pass (\S+)", printed, re.M)
    # A tolerance nothing can meet names the first pass that changed the outputs at all.
    strict = weir.verify(str(model), tolerance=-1.0)
    assert not strict["ok"] and strict["first_broken"] == changed[0]["pass"]


def test_inspect_gives_graph_runners_figures_and_graphviz(model, graph_runner, tmp_path):
    dot = tmp_path / "convnet.dot"
    summary = weir.inspect(str(model), batch=4, opt_level=0, dot=str(dot))
    printed = run_graph_runner(graph_runner, "inspect", str(model), "--batch", "4", "--opt-level", "0")
    assert summary["inputs"] == [("x", "f32[N,3,8,8]")]
    assert [name for name, _ in summary["outputs"]] == ["logits"]
    assert summary["outputs"][0][1].startswith("f32[") and summary["outputs"][0][1].endswith(",5]")
    assert f"estimated_flops: {summary['estimated_flops']} " in printed
    assert f"planned_peak_memory_bytes: {summary['planned_peak_memory_bytes']} " in printed
    assert f"parameters: {summary['parameters']} elements" in printed
    assert summary["ops"]["Conv"] == 1
    text = dot.read_text()
    assert text.startswith('digraph "small_convnet"')
    assert '"n:Conv_0" [label="Conv\\nConv_0"]' in text


def test_inspect_and_optimize_errors_name_the_file(tmp_path):
    with pytest.raises(weir.Error, match="nothing.weir"):
        weir.inspect(str(tmp_path / "nothing.weir"))
    with pytest.raises(weir.Error, match="nothing.onnx"):
        weir.optimize(str(tmp_path / "nothing.onnx"), str(tmp_path / "out.weir"))


def test_optimize_packs_a_static_plans_weights_and_says_why_not_otherwise(tmp_path, rng):
    static = tmp_path / "static.weir"
    small_convnet(batch=2).save(static)
    x = rng.standard_normal((2, 3, 8, 8), dtype=np.float32)
    reference = weir.load(str(static)).run({"x": x})["logits"]
    packed = weir.optimize(str(static), str(tmp_path / "packed.weirplan"))
    assert packed["packed_weights"]["skipped"] is None
    assert packed["packed_weights"]["kernels"] >= 1 and packed["packed_weights"]["bytes"] > 0
    plain = weir.optimize(str(static), str(tmp_path / "plain.weirplan"), pack_weights=False)
    assert "packed_weights" not in plain
    for name in ("packed.weirplan", "plain.weirplan"):
        np.testing.assert_array_equal(weir.load(str(tmp_path / name)).run({"x": x})["logits"], reference)
    # A batch of symbolic size: the layout depends on the batch fed, so nothing is packed, and the reason is given.
    symbolic = tmp_path / "symbolic.weir"
    small_convnet().save(symbolic)
    unpacked = weir.optimize(str(symbolic), str(tmp_path / "symbolic.weirplan"))
    assert "not of a static shape" in unpacked["packed_weights"]["skipped"]


def test_amp_bf16_in_load_optimize_and_verify(model, tmp_path, rng):
    x = rng.standard_normal((2, 3, 8, 8), dtype=np.float32)
    f32 = weir.load(str(model)).run({"x": x})["logits"]
    bf16 = weir.load(str(model), amp="bf16").run({"x": x})["logits"]
    assert bf16.dtype == np.float32
    assert not np.array_equal(bf16, f32), "the bf16 run gave f32's bits: did it run in bf16?"
    assert np.linalg.norm(bf16 - f32) / np.linalg.norm(f32) < 3e-2
    weir.optimize(str(model), str(tmp_path / "bf16.weir"), amp="bf16")
    np.testing.assert_array_equal(weir.load(str(tmp_path / "bf16.weir")).run({"x": x})["logits"], bf16)
    report = weir.verify(str(model), tolerance=3e-2, amp="bf16")
    assert report["ok"], report
    amp_pass = [p for p in report["passes"] if p["pass"] == "auto_mixed_precision"]
    assert amp_pass and amp_pass[0]["changed"] and 0 < amp_pass[0]["relative_l2"] < 3e-2
    with pytest.raises(weir.Error, match="amp: .*bf16"):
        weir.load(str(model), amp="int4")
