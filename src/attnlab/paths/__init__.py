"""Attention paths in a Bayesian deep multi-head attention network, finite-width limit (paper 3)."""
