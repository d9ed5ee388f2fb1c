"""The classification task kind: a latent GP on real covariates, labels through a probit
(binary) or softmax (multiclass) link."""
