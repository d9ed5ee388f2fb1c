"""nn_ensemble training cost: compile vs train, one vmapped program vs sequential fits,
and compilation with JAX's persistent cache.

Run: ``python benchmarks/bench_nn_ensemble.py`` (``--cache DIR`` to keep the cache folder).
The parent starts the same measurement twice in fresh processes sharing one cache folder:
the first compiles cold, the second should load the programs from the cache. Each child
times, for a 1500 x 8 task and 100 epochs (early stopping off, so every run does the same
work): compiling and running the K = 10 vmapped program, then compiling the K = 1 program
once and running it 10 times (10 sequential fits of the same members).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

N, D, K, EPOCHS, REPEATS = 1500, 8, 10, 100, 3


def _measure(cache: str) -> dict:
    from udora.experiments.run.jax_cache import configure_compilation_cache

    configure_compilation_cache(cache)
    import jax
    import jax.numpy as jnp
    import numpy as np

    from udora import methods
    from udora.methods.nn.lowered import lower_members, member_args
    from udora.methods.nn.method import validation_split

    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    y = (
        np.sin(X @ rng.normal(size=D) / np.sqrt(D)) * 2
        + 0.1 * X[:, 0] ** 2
        + 0.2 * rng.normal(size=N)
    )
    cfg = methods.get_method("nn_ensemble", n_epochs=EPOCHS, patience=EPOCHS + 1).config
    fit_idx, val_idx = validation_split(N, cfg.val_fraction, np.random.default_rng(1))
    Xs = (X - X.mean(0)) / X.std(0)
    ys = (y - y.mean()) / y.std()
    args = [
        jnp.asarray(a, jnp.float32) for a in (Xs[fit_idx], ys[fit_idx], Xs[val_idx], ys[val_idx])
    ]
    rows = jnp.tile(jnp.arange(fit_idx.size, dtype=jnp.int32), (K, 1))
    keys = jax.random.split(jax.random.key(0), K)

    def compile_and_run(rows, keys):
        t0 = time.perf_counter()
        lowered = lower_members(cfg, *args, rows, keys)
        t1 = time.perf_counter()
        program = lowered.compile()
        t2 = time.perf_counter()
        out = jax.block_until_ready(program(*member_args(cfg, *args, rows, keys)))
        t3 = time.perf_counter()
        return program, {"trace_s": t1 - t0, "compile_s": t2 - t1, "first_run_s": t3 - t2}, out

    vmapped, v_times, out = compile_and_run(rows, keys)
    assert int(np.min(out[2])) == EPOCHS, "early stopping must be off for a fixed workload"
    v_times["train_s"] = _best_of(lambda: vmapped(*member_args(cfg, *args, rows, keys)))

    single, s_times, _ = compile_and_run(rows[:1], keys[:1])

    def ten_fits():
        one = (single(*member_args(cfg, *args, rows[k : k + 1], keys[k : k + 1])) for k in range(K))
        return list(one)

    s_times["train_s"] = _best_of(ten_fits)

    t0 = time.perf_counter()
    methods.get_method("nn_ensemble", n_epochs=EPOCHS, patience=EPOCHS + 1).fit(X, y, seed=0)
    fit_s = time.perf_counter() - t0
    return {"vmapped_K10": v_times, "sequential_K1x10": s_times, "method_fit_s": fit_s}


def _best_of(run) -> float:
    """Least wall time of ``REPEATS`` calls (the least disturbed by other load on the host)."""
    import jax

    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        jax.block_until_ready(run())
        times.append(time.perf_counter() - t0)
    return min(times)


def _report(label: str, r: dict) -> None:
    v, s = r["vmapped_K10"], r["sequential_K1x10"]
    print(f"== {label}")
    print(
        f"  vmapped K={K}: trace {v['trace_s']:.2f} s, compile {v['compile_s']:.2f} s, "
        f"first run {v['first_run_s']:.2f} s, train {v['train_s']:.2f} s"
    )
    print(
        f"  sequential 10 x K=1: trace {s['trace_s']:.2f} s, compile {s['compile_s']:.2f} s, "
        f"train (10 fits) {s['train_s']:.2f} s"
    )
    print(f"  train time sequential / vmapped: {s['train_s'] / v['train_s']:.2f}x")
    print(
        f"  nn_ensemble.fit end to end (jit path, persistent cache warm): {r['method_fit_s']:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", help="persistent compilation cache folder (default: temp)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(_measure(opts.cache)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        cache = opts.cache or tmp
        print(f"nn_ensemble, {N} x {D}, K = {K}, {EPOCHS} epochs, width 32, 2 blocks, batch 128")
        print(
            f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
            f"train = best of {REPEATS}"
        )
        results = []
        for label in ("run 1 (cold cache)", "run 2 (same cache, fresh process)"):
            cmd = [sys.executable, __file__, "--child", "--cache", cache]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            _report(label, results[-1])
        cold, warm = (r["vmapped_K10"]["compile_s"] for r in results)
        print(f"vmapped compile: cold {cold:.2f} s -> cached {warm:.2f} s")
        print(json.dumps({"runs": results}))


if __name__ == "__main__":
    main()
