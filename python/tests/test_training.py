"""Training from Python: builder and nn layers, minimize with an optimizer and a Strategy, the Trainer,
checkpoints, data parallel ranks against one rank on the whole batch, and the trained model saved and run."""

import numpy as np
import pytest

import launched_training
import weir


def classifier(batch):
    """A 2-layer MLP on 16 features and 4 classes whose output is 'loss' (launched_training.py's)."""
    return launched_training.mlp(batch)


def inference_mlp():
    b = weir.GraphBuilder("mlp", seed=5)
    x = b.input("x", "f32", ["N", 16])
    h = weir.nn.relu(weir.nn.Linear(b, "fc1", 16, 32)(x))
    b.output(weir.nn.Linear(b, "fc2", 32, 4)(h), name="logits")
    return b.finish()


@pytest.fixture
def data():
    """Four Gaussian clusters: learnable, so the loss must fall."""
    return launched_training.cluster_data()


def test_training_lowers_the_loss_and_the_saved_model_classifies(data, tmp_path):
    step = weir.minimize(classifier(32), "loss", weir.Optimizer("adam"))
    assert sorted(step.parameters) == ["fc1/bias", "fc1/weight", "fc2/bias", "fc2/weight"]
    trainer = weir.Trainer(step, data, batch_size=32, lr=1e-2, seed=1)
    stats = trainer.run_epochs(3)
    assert stats["steps"] == 48 and len(stats["losses"]) == 48
    assert stats["losses"][-1] < stats["losses"][0] / 4
    model = inference_mlp()
    trainer.bake(model)
    model.save(tmp_path / "mlp.weir")
    logits = weir.load(str(tmp_path / "mlp.weir")).run({"x": data["x"]})["logits"]
    accuracy = float(np.mean(np.argmax(logits, axis=1) == data["labels"]))
    assert accuracy > 0.9
    saved = weir.load(str(tmp_path / "mlp.weir"), opt_level=0)  # parameters stay persistent values at level 0
    for name in step.parameters:
        np.testing.assert_array_equal(saved.state(name), trainer.state(name), err_msg=name)


def test_resuming_a_checkpoint_continues_exactly(data, tmp_path):
    def fresh():
        return weir.Trainer(weir.minimize(classifier(32), "loss", weir.Optimizer("adam")), data,
                            batch_size=32, lr=1e-2, seed=3)

    straight = fresh().run_steps(24)["losses"]
    first = fresh()
    head = first.run_steps(10)["losses"]
    first.save(tmp_path / "ckpt.npz")
    resumed = fresh()
    resumed.resume(tmp_path / "ckpt.npz")
    assert resumed.step == 10
    tail = resumed.run_steps(14)["losses"]
    assert head + tail == straight  # bit-equal: same batches, same state


def test_data_parallel_ranks_match_one_rank_on_the_whole_batch(data):
    sgd = weir.Optimizer("sgd")
    whole = weir.Trainer(weir.minimize(classifier(64), "loss", sgd), data, batch_size=64, lr=0.1, seed=2)
    strategy = weir.Strategy()
    strategy.data_parallel.ranks = 2
    step = weir.minimize(classifier(32), "loss", sgd, strategy)  # each rank's graph: half the batch
    assert step.ranks == 2 and step.allreduces >= 1
    ranks = weir.Trainer(step, data, batch_size=64, lr=0.1, seed=2)
    np.testing.assert_allclose(ranks.run_steps(12)["losses"], whole.run_steps(12)["losses"], rtol=1e-5)
    np.testing.assert_allclose(ranks.state("fc1/weight"), whole.state("fc1/weight"), rtol=1e-4, atol=1e-6)


def test_strategy_fields_and_json():
    strategy = weir.Strategy.from_json('{"amp": true, "amp_configs": {"dtype": "bf16"}, "fuse_grad_size_in_MB": 8}')
    assert strategy.amp.enabled and strategy.amp.dtype == "bf16"
    assert strategy.communication.fuse_grad_size_in_MB == 8
    strategy.recompute.mode = "auto"
    assert strategy.recompute.mode == "auto"
    with pytest.raises(weir.Error, match="recompute mode"):
        strategy.recompute.mode = "sometimes"
    with pytest.raises(weir.Error, match="no_such_field"):
        weir.Strategy.from_json('{"no_such_field": 1}')


def test_amp_training_still_learns(data):
    strategy = weir.Strategy()
    strategy.amp.enabled = True
    step = weir.minimize(classifier(32), "loss", weir.Optimizer("adam"), strategy)
    assert step.amp_low_precision_nodes > 0
    losses = weir.Trainer(step, data, batch_size=32, lr=1e-2).run_epochs(2)["losses"]
    assert losses[-1] < losses[0] / 2


def test_training_errors_are_weir_errors(data):
    with pytest.raises(weir.Error, match="unknown optimizer 'adamax'"):
        weir.Optimizer("adamax")
    with pytest.raises(weir.Error, match="nope"):
        weir.minimize(classifier(32), "nope")
    step = weir.minimize(classifier(32), "loss")
    with pytest.raises(weir.Error, match="field 1 has 512 examples; field 0 has 10"):
        weir.Trainer(step, {"x": data["x"][:10], "labels": data["labels"]}, batch_size=32)
