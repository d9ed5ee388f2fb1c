"""A simulated sweep of the NN trainer: compile share and training time over 10 configs.

Trains ``--trials`` configs drawn (fixed seed) from the default search space (width in
{16, 32, 64}, 1-4 blocks, batch size in {64, 128, 256, 512}, 50-200 epochs, log-uniform
learning rate) with ``--members`` members on ``--rows`` x ``--d`` synthetic rows, one
after the other in this process, as a sweep's trials on one worker do. Prints per config
the wall and compile seconds (JAX's own compile events, persistent-cache reads
included), then the sums, the compile share and the median non-compile seconds. Run it
with the persistent cache off so every program is compiled:

    UDORA_JAX_CACHE=off python benchmarks/bench_trainer.py
    UDORA_JAX_CACHE=off python benchmarks/bench_trainer.py --pad-width   # one program

``--pad-width`` sets :data:`udora.methods.nn.padding.PAD_WIDTH` (one program for every
width, at the padded width's FLOPs). Comparing with the trainer before version 2 means
running this script from a checkout of that commit (it then has no ``PAD_WIDTH``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from udora.experiments.tuning.trials import compile_seconds
from udora.methods.nn import trainer
from udora.methods.nn.config import NNConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--rows", type=int, default=720, help="fit rows (concrete: ~740)")
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--pad-width", action="store_true")
    args = parser.parse_args()
    if args.pad_width:
        from udora.methods.nn import padding

        padding.PAD_WIDTH = True
    rng = np.random.default_rng(0)
    X = jnp.asarray(rng.normal(size=(args.rows, args.d)), jnp.float32)
    y = jnp.asarray(np.sin(np.asarray(X[:, 0])) + 0.3 * rng.normal(size=args.rows), jnp.float32)
    rows = jnp.tile(jnp.arange(args.rows, dtype=jnp.int32), (args.members, 1))
    keys = jax.random.split(jax.random.key(0), args.members)
    compile_seconds()  # start listening
    draw = np.random.default_rng(1)
    walls, compiles = [], []
    print(f"{'width':>5} {'blocks':>6} {'batch':>5} {'epochs':>6} {'wall s':>7} {'compile s':>9}")
    for _ in range(args.trials):
        cfg = NNConfig(
            width=int(draw.choice([16, 32, 64])),
            blocks=int(draw.integers(1, 5)),
            batch_size=int(draw.choice([64, 128, 256, 512])),
            n_epochs=int(draw.integers(50, 201)),
            n_members=args.members,
            learning_rate=float(10 ** draw.uniform(-4, np.log10(5e-3))),
        )
        c0, t0 = compile_seconds(), time.perf_counter()
        jax.block_until_ready(trainer.train_members(cfg, X, y, X[:0], y[:0], rows, keys))
        walls.append(time.perf_counter() - t0)
        compiles.append(compile_seconds() - c0)
        print(
            f"{cfg.width:>5} {cfg.blocks:>6} {cfg.batch_size:>5} {cfg.n_epochs:>6} "
            f"{walls[-1]:>7.2f} {compiles[-1]:>9.2f}",
            flush=True,
        )
    total, compiled = sum(walls), sum(compiles)
    rest = [w - c for w, c in zip(walls, compiles, strict=True)]
    print(
        f"trainer version {getattr(trainer, 'TRAINER_VERSION', 1)}, "
        f"pad width {getattr(trainer, 'PAD_WIDTH', False)}"
    )
    print(
        f"summed wall {total:.1f} s, compile {compiled:.1f} s ({compiled / total:.0%}), "
        f"non-compile {sum(rest):.1f} s, median non-compile {statistics.median(rest):.2f} s"
    )


if __name__ == "__main__":
    main()
