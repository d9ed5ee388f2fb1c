"""Which differences between methods are real: ranks, bootstrap intervals of the mean
rank, the Friedman test with Nemenyi's critical difference, Holm's correction over the
secondary metrics, and pairwise win rates (docs/rankings.md).

Blocks are presets, each a config's mean over its seeds (the seeds of a preset share its
data pool and kernel, so preset x seed blocks would overstate significance); the GP
references are never ranked.
"""
