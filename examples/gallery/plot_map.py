"""
Your model on the map: a 48-layer BERT at its standard initialisation
=====================================================================

Paper 1 (Giorlandino, Goldt) predicts, from a model's initialisation alone, whether the signal survives its depth
or collapses in rank (too weak a residual, too little attention temperature) or in entropy (too much). ``attnlab
map`` reads a model's weights layer by layer, puts it on the trainability diagram of its depth (Fig. 1c), predicts
the per-layer token cosine ρ_ℓ (Eq. 19 with each layer's own β, σ_v² and MLP variances) and measures the same on
random tokens. A BERT-large-shaped encoder (48 layers, width 1024, 16 heads) at the standard std 0.02 has
α_SA = 1 below α_c(48): rank collapse. The fix raises α_SA to twice α_c (its output projections scaled down).
Here at 24 × 32 tokens to keep the docs build quick; the command line is
``attnlab map --arch bert --layers 48 --hidden 1024 --heads 16``.
"""

from attnlab.signal.mapping import place, read, report

spec = read.from_family("bert", layers=48, hidden=1024, heads=16)
doc = place.map_with_fix(spec, T=32, batch=24)
m, fixed = doc["map"], doc["fixed"]["map"]
print(f"phase: {m['phase']}; β = {m['beta']:.3f} (β_c = {m['beta_c']:.2f}), α_SA = {doc['alpha_sa']:g} "
      f"(α_c(48) = {m['alpha_c']:.2f}); fix: α_SA = {m['fix']['alpha_sa']:.2f} → {fixed['phase']}")

# %%
# The diagram with both points, α_c(L), and the predicted (lines) beside the measured (dots) ρ_ℓ and entropy, for
# the model as initialised and for its fixed version.
fig = report.figure(doc)
