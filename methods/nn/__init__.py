"""Shared neural-network parts: residual tabular backbone, Gaussian heads, optimisers and
the vmapped K-member trainer."""
