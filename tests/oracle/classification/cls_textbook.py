"""GPML's binary EP as printed, in numpy: the independent computation the classification
fit and approximation tests compare with."""

import numpy as np
import scipy.stats


def textbook_ep(K, y, m, sweeps=100):
    """GPML Alg. 3.5 as printed (sequential, rank-one updates, sites on f with prior mean
    m, dense inverses) and log Z_EP by eq. 3.65 as printed: (log Z, tau, mu of f)."""
    n = y.size
    tau, nu = np.zeros(n), np.zeros(n)
    Sigma, mu = K.copy(), np.full(n, m)
    prior_term = np.linalg.solve(K, np.full(n, m))
    for _ in range(sweeps):
        for i in range(n):
            tc, nc = 1 / Sigma[i, i] - tau[i], mu[i] / Sigma[i, i] - nu[i]
            mc, vc = nc / tc, 1 / tc
            z = y[i] * mc / np.sqrt(1 + vc)
            r = scipy.stats.norm.pdf(z) / scipy.stats.norm.cdf(z)
            mh = mc + y[i] * vc * r / np.sqrt(1 + vc)
            vh = vc - vc**2 * r * (z + r) / (1 + vc)
            dt = 1 / vh - tc - tau[i]
            tau[i] += dt
            nu[i] = mh / vh - nc
            si = Sigma[:, i].copy()
            Sigma -= dt / (1 + dt * si[i]) * np.outer(si, si)
            mu = Sigma @ (nu + prior_term)
        Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
        mu = Sigma @ (nu + prior_term)
    tc = 1 / np.diag(Sigma) - tau
    mc, vc = (mu / np.diag(Sigma) - nu) / tc, 1 / tc
    mt, vt = nu / tau, 1 / tau
    A = K + np.diag(vt)
    log_z = (
        -0.5 * np.linalg.slogdet(A)[1]
        - 0.5 * (mt - m) @ np.linalg.solve(A, mt - m)
        + np.sum(scipy.stats.norm.logcdf(y * mc / np.sqrt(1 + vc)))
        + 0.5 * np.sum(np.log(vc + vt))
        + np.sum((mc - mt) ** 2 / (2 * (vc + vt)))
    )
    return log_z, tau, mu
