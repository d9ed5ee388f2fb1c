"""Where a DKL fit's time goes: the marginal-likelihood step, and compile against training.

Prints, on the 1500 x 8 synthetic task of the method benchmarks:

- the milliseconds of one value-and-gradient of the negative log marginal likelihood on
  a ``--batch``-point subset (DKL's step, float64), through GPJax's ``conjugate_mll`` and
  through a dense Cholesky written here (``K + s^2 I = L L^T``,
  ``0.5 |L^-1 y|^2 + sum log diag L + b/2 log 2 pi``), median of ``--repeat`` calls: if
  the two agree, the step is the linear algebra and GPJax adds nothing to cut;
- for ``dkl`` fits at ``--steps`` (default config otherwise): the fit's wall time and the
  part JAX spends tracing, lowering and compiling (JAX's monitoring events), twice each,
  so the second fit of a step count shows what a trial with the same shapes pays.

    python benchmarks/bench_dkl.py [--batch 512] [--steps 300,600]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time

import equinox as eqx
import gpjax as gpx
import jax
import jax.monitoring
import jax.numpy as jnp
import numpy as np
from synthetic import synthetic_task

from udora import methods

_SPENT: collections.Counter[str] = collections.Counter()
jax.monitoring.register_event_duration_secs_listener(
    lambda name, secs, **_: _SPENT.update({name: secs})
)


def _compile_seconds() -> float:
    return sum(v for k, v in _SPENT.items() if k.startswith("/jax/core/compile/"))


def step_ms(batch: int, repeat: int) -> dict[str, float]:
    """Median ms of one jitted value-and-gradient of each negative log marginal likelihood."""
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        F = jnp.asarray(rng.normal(size=(batch, 4)))
        y = jnp.asarray(rng.normal(size=(batch, 1)))
        kernel = gpx.kernels.RBF(lengthscale=jnp.asarray(1.0), variance=jnp.asarray(1.0))
        prior = gpx.gps.Prior(kernel=kernel, mean_function=gpx.mean_functions.Zero())
        model = prior * gpx.likelihoods.Gaussian(obs_stddev=jnp.asarray(0.3))
        params, static = eqx.partition(model, eqx.is_array)

        def library(p):
            return -gpx.objectives.conjugate_mll(eqx.combine(p, static), gpx.Dataset(X=F, y=y))

        def dense(p):
            m = eqx.combine(p, static)
            K = m.prior.kernel.cross_covariance(F, F)
            A = K + jnp.diag(m.likelihood.noise_vector(batch) + m.prior.jitter)
            L = jnp.linalg.cholesky(A)
            a = jax.scipy.linalg.solve_triangular(L, y[:, 0], lower=True)
            return 0.5 * a @ a + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * batch * jnp.log(2 * jnp.pi)

        out = {}
        for name, fn in (("gpjax conjugate_mll", library), ("dense Cholesky", dense)):
            step = jax.jit(jax.value_and_grad(fn))
            jax.block_until_ready(step(params))
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                jax.block_until_ready(step(params))
                times.append(time.perf_counter() - t0)
            out[name] = 1e3 * statistics.median(times)
            out[f"{name} value"] = float(step(params)[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--steps", default="300,600")
    args = parser.parse_args()
    ms = step_ms(args.batch, args.repeat)
    print(f"one value-and-gradient of the NLML on {args.batch} points (float64), median:")
    for name in ("gpjax conjugate_mll", "dense Cholesky"):
        print(f"  {name:<20} {ms[name]:7.1f} ms   (value {ms[name + ' value']:.6f})")
    X, y, X_test, _ = synthetic_task(0)
    print(f"dkl fits on {X.shape[0]} x {X.shape[1]}, batch_size {args.batch}:")
    for steps in (int(s) for s in args.steps.split(",")):
        for attempt in ("first", "again"):
            _SPENT.clear()
            t0 = time.perf_counter()
            model = methods.get_method("dkl", n_steps=steps, batch_size=args.batch)
            model.fit(X, y, seed=0).predict(X_test)
            wall = time.perf_counter() - t0
            spent = _compile_seconds()
            print(
                f"  n_steps {steps:5d} ({attempt}): {wall:6.1f} s, of which compile "
                f"{spent:5.1f} s; {1e3 * (wall - spent) / steps:5.1f} ms per step"
            )


if __name__ == "__main__":
    main()
