"""Clustering heads in sparse modular addition (paper 4: Odonnat, Bouaziz, Cabannes)."""
