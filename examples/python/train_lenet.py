#!/usr/bin/env python3
"""Trains LeNet on Fashion-MNIST from Python, saves it, and runs the saved model (docs/python.md).

    PYTHONPATH=build/ci/python /usr/bin/python3 examples/python/train_lenet.py --out /tmp/lenet

Builds the training graph with weir.GraphBuilder and weir.nn, minimizes the cross-entropy with Adam,
trains one epoch (or --steps), bakes the trained weights into an inference graph with a symbolic batch,
saves it as OUT/lenet.weir, loads that file with weir.load and prints the test accuracy.
"""

import argparse
import os
import time

import numpy as np

import weir


def lenet(b, x, classes=10):
    """Two 5x5 convolutions with max-pooling, then two fully connected layers (models/lenet.cc)."""
    conv1 = weir.nn.Conv2d(b, "conv1", in_channels=1, out_channels=32, kernel=5, padding=2)
    conv2 = weir.nn.Conv2d(b, "conv2", in_channels=32, out_channels=64, kernel=5, padding=2)
    fc1 = weir.nn.Linear(b, "fc1", 64 * 7 * 7, 512)
    fc2 = weir.nn.Linear(b, "fc2", 512, classes)
    h = weir.nn.max_pool2d(weir.nn.relu(conv1(x)), kernel=2, stride=2)
    h = weir.nn.max_pool2d(weir.nn.relu(conv2(h)), kernel=2, stride=2)
    h = weir.nn.relu(fc1(weir.nn.flatten(h)))
    return fc2(h)


def training_graph(batch):
    b = weir.GraphBuilder("lenet", seed=1)
    x = b.input("x", "f32", [batch, 1, 28, 28])
    labels = b.input("labels", "i64", [batch])
    b.output(weir.nn.cross_entropy(lenet(b, x), labels), name="loss")
    return b.finish()


def inference_graph():
    b = weir.GraphBuilder("lenet", seed=1)
    x = b.input("x", "f32", ["N", 1, 28, 28])
    b.output(weir.nn.softmax(lenet(b, x)), name="probability")
    return b.finish()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="lenet-out", help="where lenet.weir and the checkpoint go")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=0, help="train this many steps instead of one epoch")
    parser.add_argument("--test-examples", type=int, default=10000, help="evaluate on the first N test images")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    mnist = weir.data.load_fashion_mnist()
    step = weir.minimize(training_graph(args.batch), "loss", weir.Optimizer("adam"))
    trainer = weir.Trainer(step, {"x": mnist["train_images"], "labels": mnist["train_labels"]},
                           batch_size=args.batch, lr=args.lr, seed=1)
    stats = trainer.run_steps(args.steps) if args.steps > 0 else trainer.run_epochs(1)
    print(f"trained {stats['steps']} steps, {stats['ms_per_step']:.1f} ms per step, last loss {stats['last_loss']:.4f}")
    trainer.save(os.path.join(args.out, "checkpoint.npz"))

    model = inference_graph()
    trainer.bake(model)
    path = os.path.join(args.out, "lenet.weir")
    model.save(path)

    session = weir.load(path, opt_level=3)
    images = mnist["test_images"][: args.test_examples]
    labels = mnist["test_labels"][: args.test_examples]
    start = time.perf_counter()
    probability = np.concatenate([session.run({"x": images[i:i + 1000]})["probability"]
                                  for i in range(0, len(images), 1000)])
    seconds = time.perf_counter() - start
    accuracy = float(np.mean(np.argmax(probability, axis=1) == labels))
    print(f"saved {path}; test_accuracy: {accuracy:.4f} on {len(images)} images ({seconds:.2f} s)")


if __name__ == "__main__":
    main()
