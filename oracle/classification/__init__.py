"""The classification task kind: a latent GP on real covariates, labels through a probit
(binary) or softmax (multiclass) link, and per-point targets from the posterior over the
latent function given the labels, sampled by NUTS and checked (docs/design.md,
"Classification").

Reading and validating a classification preset needs no JAX; the sampler and the task
builder import it when a task is built.
"""
