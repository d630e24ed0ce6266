"""One rank of a data-parallel job, started by `graph-runner launch` or mpirun (test_distributed.py):

    launched_training.py OUT_DIR STEPS

trains the MLP of test_training.py on the seeded cluster data, 64 examples a step split over the world,
and rank 0 writes OUT_DIR/losses.npy, OUT_DIR/fc1_weight.npy and a checkpoint OUT_DIR/ckpt.npz."""

import sys

import numpy as np

import weir


def cluster_data():
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((4, 16)).astype(np.float32) * 2
    labels = rng.integers(0, 4, 512).astype(np.int64)
    x = centres[labels] + rng.standard_normal((512, 16)).astype(np.float32) * 0.5
    return {"x": x, "labels": labels}


def mlp(batch):
    b = weir.GraphBuilder("mlp", seed=5)
    x = b.input("x", "f32", [batch, 16])
    labels = b.input("labels", "i64", [batch])
    h = weir.nn.relu(weir.nn.Linear(b, "fc1", 16, 32)(x))
    logits = weir.nn.Linear(b, "fc2", 32, 4)(h)
    b.output(weir.nn.cross_entropy(logits, labels), name="loss")
    return b.finish()


def train(out_dir, steps, world):
    ranks = world.size if world is not None else 1
    strategy = weir.Strategy()
    strategy.data_parallel.ranks = ranks
    step = weir.minimize(mlp(64 // ranks), "loss", weir.Optimizer("sgd"), strategy)
    trainer = weir.Trainer(step, cluster_data(), batch_size=64, lr=0.1, seed=2, world=world)
    losses = trainer.run_steps(steps)["losses"]
    if world is None or world.rank == 0:
        np.save(f"{out_dir}/losses.npy", np.array(losses))
        np.save(f"{out_dir}/fc1_weight.npy", trainer.state("fc1/weight"))
        trainer.save(f"{out_dir}/ckpt.npz")
    return losses


if __name__ == "__main__":
    world = weir.launched_world(job="python-test", timeout_s=60)
    print(f"world: {world}", flush=True)
    train(sys.argv[1], int(sys.argv[2]), world)
