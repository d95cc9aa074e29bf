"""The Markov task's defaults against the paper and the public code, and the public code's options: per-layer
widths and variances, head lists, in-plane noise split, state-dependent switching, starts, history, Hessian.

The public code's definitions are written down here in words and formulas (not its code):
* tokens: bos = 0 at t = 0, then x_t = v_{c_t} + noise, with v+ = √2 on the first N0/2 features, v− = √2 on the
  second half; a one-hot position of size T + 1 appended to every token; noise strength σ_diff along
  (v+ − v−)/|·| ("perpendicular"), σ_sum along (v+ + v−)/|·| ("parallel"), σ⊥ out of the plane;
* chain: uniform first state; class +1 stays with probability p_{a+} = 0.7 in + and p_{a−} = 0.7 in −, class −1
  with p_{b±} = 0.3 (switching 0.3 / 0.7), each its own stay probability per state;
* "same_token" head (the paper's good head) times β: features block q qᵀ with q = (v+ − v−)/(|v+ − v−|²/2),
  positions block 1 at (key t + shift, query t) for keys ≥ 1 and (p + i + max(p − i, i))/2 = 1.5 (p = i = 1) on the
  bos row for queries ≥ 1, cross blocks 0; "different_token" flips the sign of the features block; "blank"
  heads with perturbation ε add ε·N(0,1)/N0 to the features block, ε·N(0,1) to the positions block and
  ε·N(0,1)/√N0 to the cross blocks (the paper's random heads, App. G.2.2, ε = 1); "uniform" gives 1/(T+1);
* readout: the paper (Sec. 4.1.1, App. G.2) reads the first token after the bos, t* = 1; the public code the last;
* order parameters: GP start U_ℓ = σ_a² Π_{k≥ℓ} σ_k² I; "perturbed" start (I + ε GGᵀ/n) times that; the readout
  scalar u solves u² + σ_a²(N_L H_L/N_a − 1) u − σ_a² N_L Tr U_L/(N_a σ_L²) = 0; the action divides by the widest
  width, level ℓ weighted by N_ℓ.
"""

import math

import numpy as np
import pytest
import torch

from attnlab.core.config import ConfigError, parse_sets, resolve
from attnlab.paths import model
from attnlab.paths.data import markov as data
from attnlab.paths.experiments.markov import Fig2cConfig
from attnlab.paths.theory import diagnostics, kernels, problems
from attnlab.paths.theory import saddle as theory

F64 = torch.float64


def test_markov_defaults_are_the_papers():
    c = resolve(Fig2cConfig, "paper")
    assert (c.readout, c.layout, c.beta, c.sigma_par, c.sigma_perp, c.P, c.P_test, c.tau, c.T, c.N0) == \
        (1, "all", 10.0, 1.0, 1.0, 100, 1000, 0.01, 30, 200)
    assert c.heads is None and c.attention == "softmax" and c.layer_widths is None and c.variances is None


def test_heads_are_the_public_codes_definitions():
    task = data.MarkovTask()
    N0, T, beta = task.N0, task.T, 10.0
    vp, vm = task.state_vectors()
    q = (vp - vm) / ((vp - vm) @ (vp - vm) / 2)
    for kind, sign in (("same_token", 1.0), ("different_token", -1.0)):
        for shift in (-1, -2, 1):
            W = data.token_head(task, kind, beta, shift) / beta
            assert torch.allclose(W[:N0, :N0], sign * torch.outer(q, q), rtol=1e-14, atol=0)
            assert not W[:N0, N0:].any() and not W[N0:, :N0].any()
            pos = torch.zeros(T + 1, T + 1, dtype=F64)
            for t in range(1, T + 1):
                if 1 <= t + shift <= T:
                    pos[t + shift, t] = 1.0
            pos[0, 1:] = (1 + 1 + max(1 - 1, 1)) / 2
            assert torch.allclose(W[N0:, N0:], pos, rtol=1e-14, atol=0)
    assert torch.equal(data.good_head(task), data.token_head(task, "same_token"))
    # random heads: per-block variances 1/N0², 1/N0, 1 (times (β ε)²)
    g = torch.Generator().manual_seed(0)
    R = torch.stack([data.random_head(task, g, beta, 0.5) for _ in range(20)]) / (beta * 0.5)
    for blk, want in ((R[:, :N0, :N0], N0**-2), (R[:, :N0, N0:], 1 / N0), (R[:, N0:, :N0], 1 / N0),
                      (R[:, N0:, N0:], 1.0)):
        assert abs(float(blk.var()) / want - 1) < 0.05


def test_tokens_chain_and_noise_follow_the_public_codes_laws():
    task = data.MarkovTask(sigma_perp=2.0, sigma_diff=0.5, sigma_sum=3.0, switch_plus=(0.2, 0.4),
                           switch_minus=(0.9, 0.6))
    d = data.sample(task, 3000, torch.Generator().manual_seed(1))
    N0, T = task.N0, task.T
    assert not d.X[:, 0, :N0].any() and torch.equal(d.X[0, :, N0:], torch.eye(T + 1, dtype=F64))
    assert int((d.y > 0).sum()) == 1500
    prev, nxt = d.states[:, :-1], d.states[:, 1:]
    for cls, (p_from_plus, p_from_minus) in ((1.0, (0.2, 0.4)), (-1.0, (0.9, 0.6))):
        m = (d.y == cls)[:, None]
        for st, p in ((1.0, p_from_plus), (-1.0, p_from_minus)):
            sel = m & (prev == st)
            assert abs(float((nxt[sel] != st).double().mean()) - p) < 0.02
    vp, vm = task.state_vectors()
    noise = d.X[:, 1:, :N0] - torch.where(d.states[..., None] > 0, vp, vm)
    e_diff, e_sum = (vp - vm) / (vp - vm).norm(), (vp + vm) / (vp + vm).norm()
    assert abs(float((noise @ e_diff).std()) / 0.5 - 1) < 0.02
    assert abs(float((noise @ e_sum).std()) / 3.0 - 1) < 0.02
    out = noise - (noise @ e_diff)[..., None] * e_diff - (noise @ e_sum)[..., None] * e_sum
    assert abs(float(out.pow(2).sum(-1).mean()) / (N0 - 2) / 4.0 - 1) < 0.02


def test_state_independent_chain_is_unchanged_by_the_state_dependent_path():
    """Equal per-state probabilities take the vectorised path; the stepwise path gives the same chains."""
    y = torch.tensor([1.0, -1.0] * 50, dtype=F64)
    a = data.sample_chains(data.MarkovTask(), y, torch.Generator().manual_seed(3))
    b = data.sample_chains(data.MarkovTask(switch_plus=(0.3, 0.3 + 1e-15), switch_minus=(0.7, 0.7)), y,
                           torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


def test_head_list_from_config_and_cli():
    base = resolve(Fig2cConfig, "quick")
    c = resolve(Fig2cConfig, "quick", parse_sets(["heads=[[good, random], [uniform, random]]"]))
    assert [[h.kind for h in lay] for lay in c.heads] == [["same_token", "random"], ["uniform", "random"]]
    task = data.MarkovTask()
    G = torch.Generator
    named = data.markov_heads(task, base.layout, G().manual_seed(5))
    listed = data.build_heads(task, c.heads, G().manual_seed(5))
    assert all(torch.equal(a, b) for a, b in zip(named, listed, strict=True))
    c3 = resolve(Fig2cConfig, "quick", parse_sets(["heads=[[good, {kind: different_token, shift: -2}], [uniform]]",
                                                   "sample_widths=[]", "layer_widths=[1, 2, 1]"]))
    assert c3.L == 2 and c3.heads[0][1].shift == -2
    for bad, msg in (("heads=[[good, foo], [uniform]]", "head kind 'foo' is not allowed"),
                     ("heads=[[good], []]", "at least one head per layer"),
                     ("heads=[[{kind: good, width: 3}]]", "unknown head option 'width'"),
                     ("layer_widths=[1, 2]", "3 positive entries")):
        with pytest.raises(ConfigError, match=msg) as exc:
            resolve(Fig2cConfig, "quick", parse_sets([bad, "sample_widths=[]"]))
        assert "\n" not in str(exc.value)
    with pytest.raises(ConfigError, match="Gibbs sampler draws equal widths"):
        resolve(Fig2cConfig, "quick", parse_sets(["layer_widths=[1, 2, 1]"]))


def test_different_token_head_attends_on_a_change():
    task = data.MarkovTask(sigma_par=0.0, sigma_perp=0.0)
    d = data.sample(task, 100, torch.Generator().manual_seed(2))
    om = model.attention(d.X, data.token_head(task, "different_token")[None])[:, 0]
    arg = om.argmax(dim=1)[:, 2:]
    changed = d.states[:, 1:] != d.states[:, :-1]
    want = torch.where(changed, torch.arange(1, task.T).expand_as(changed), torch.zeros_like(changed, dtype=torch.long))
    assert float((arg == want).double().mean()) > 0.9


# -- per-layer widths and variances ---------------------------------------------------------------------


def _problem(Hs=(2, 2), variances=None, P=14, D=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = math.prod(Hs)
    return kernels.Problem(torch.randn(P, n, D, generator=g, dtype=F64), torch.sign(torch.randn(P, generator=g,
                           dtype=F64)), torch.randn(5, n, D, generator=g, dtype=F64),
                           torch.sign(torch.randn(5, generator=g, dtype=F64)), tuple(Hs), 1.0, variances)


def test_equal_widths_and_variances_are_the_papers_action():
    pb = _problem()
    kern = kernels.PathKernels(pb.Xi)
    a = theory.Action(kern, pb.y, 0.1, 7.0, pb.Hs)
    b = theory.Action(kern, pb.y, 0.1, (7.0, 7.0, 7.0), pb.Hs, variances=(1.0,) * 4)
    Us = [u * 1.3 + 0.05 for u in theory.gp_levels(pb.Hs)]
    va, vb = a.at(Us), b.at(Us)
    assert float(abs(va.S - vb.S)) < 1e-13 and all(torch.allclose(x, y, atol=1e-13) for x, y in
                                                    zip(va.grads, vb.grads, strict=True))
    # scaling every width by c is α/c and the same U* up to the overall 1/c of S
    c = theory.Action(kern, pb.y, 0.1, (14.0, 14.0, 14.0), pb.Hs)
    assert abs(c.alpha - a.alpha / 2) < 1e-15


def test_widths_and_variances_gradient_gp_limit_and_readout_scalar():
    var = (1.3, 0.7, 1.6, 2.0)
    pb = _problem(variances=var)
    kern = kernels.PathKernels(pb.Xi, pb.sigma0)
    widths = (6.0, 11.0, 4.0)
    act = theory.Action(kern, pb.y, 0.1, widths, pb.Hs, variances=var)
    par = theory.CholeskyParams(act.sizes)
    th = 0.3 * torch.randn(par.dim, generator=torch.Generator().manual_seed(1), dtype=F64)
    grad = par.grad(par.unpack(th), act(par.unpack(th)).grads)
    fd = torch.stack([(act(par.unpack(th + e), grad=False).S - act(par.unpack(th - e), grad=False).S) / 2e-6
                      for e in 1e-6 * torch.eye(par.dim, dtype=F64)])
    assert float((fd - grad).abs().max() / grad.abs().max()) < 1e-6
    # GP limit: U^(ℓ) = σ_a² Π_{k≥ℓ} σ_k² I
    sp = theory.solve(theory.Action(kern, pb.y, 0.1, (math.inf,) * 3, pb.Hs, variances=var),
                      [1.5 * u + 0.1 for u in theory.gp_levels(pb.Hs)])
    for U, want in zip(sp.Us, (2.0 * 1.6 * 0.7, 2.0 * 1.6, 2.0), strict=True):
        assert float((U - want * torch.eye(U.shape[0], dtype=F64)).abs().max()) < 1e-6
    assert torch.allclose(pb.U_gp(), sp.U, atol=1e-6)
    # the readout scalar at the solution solves the public code's quadratic
    sp = theory.solve(act, tol=1e-10)
    u, UL, (NL, Na), sa, sL, HL = float(sp.Us[-1]), sp.Us[-2], widths[1:], var[-1], var[-2], pb.Hs[-1]
    b = sa * (NL * HL / Na - 1)
    assert abs(u - (-b + math.sqrt(b * b + 4 * float(torch.trace(UL)) * NL * sa / (Na * sL))) / 2) < 1e-8


def test_prior_kernel_with_per_layer_widths_and_variances():
    """E_prior[f f'] = (σ_0² σ_1² ··· σ_L² σ_a² / n) Σ_π C_ππ for any widths: the forward pass's 1/√fan-in and the
    kernel's σ_0² agree (Problem.U_gp and PathKernels)."""
    g = torch.Generator().manual_seed(0)
    Hs, var, widths = [2, 2], (1.3, 0.7, 1.6, 2.0), (5, 9, 13)
    X = torch.randn(4, 5, 6, generator=g, dtype=F64)
    heads = [3 * torch.randn(H, 6, 6, generator=g, dtype=F64) / 6 for H in Hs]
    Xi = model.path_features(X, heads, "mean")
    w = model.Weights.prior(20_000, 0, 6, Hs, g, widths=widths, variances=var)
    f = model.forward(X, heads, w, "mean")
    assert float((f - model.forward_paths(Xi, w)).abs().max() / f.abs().max()) < 1e-10
    pb = kernels.Problem(Xi, torch.ones(4, dtype=F64), Xi, torch.ones(4, dtype=F64), tuple(Hs), 1.0, var)
    K = kernels.PathKernels(Xi, pb.sigma0).K(pb.U_gp())
    assert float((f.T @ f / f.shape[0] - K).abs().max() / K.abs().max()) < 0.03
    U = model.order_parameter(w).mean(0)
    assert float((U - pb.U_gp()).abs().max() / pb.U_gp()[0, 0]) < 0.03


# -- starts, history, Hessian, float32 ----------------------------------------------------------------


def test_starts_history_and_hessian():
    pb = _problem()
    kern = kernels.PathKernels(pb.Xi)
    act = theory.Action(kern, pb.y, 0.1, 5.0, pb.Hs)
    gen = torch.Generator().manual_seed(0)
    pert = diagnostics.start(act, "perturbed", strength=0.5, scale=2.0, generator=gen)
    assert all(float(torch.linalg.eigvalsh(U).min()) > 0 for U in pert)
    gvb = diagnostics.start(act, "good_vs_bad", good=1, bad_factor=0.1, scale=3.0)
    assert torch.allclose(gvb[0], torch.diag(torch.tensor([3.0, 0.3, 0.3, 0.3], dtype=F64)), rtol=1e-15)
    sps = [theory.solve(act, s, tol=1e-10, history=3) for s in (None, pert, gvb)]
    for sp in sps[1:]:
        assert float((sp.U - sps[0].U).abs().max()) < 1e-6
    h = sps[0].history
    assert h["step"][0] == 0 and h["step"][-1] == sps[0].n_iter and all(s % 3 == 0 for s in h["step"][1:-1])
    assert np.allclose(h["energy"] * act.alpha + h["entropy"], h["S"])
    assert np.allclose(h["U1"][-1], sps[0].U.numpy()) and h["max_grad"].shape == (len(h["step"]), 3)
    assert h["max_grad"][-1].max() <= 1e-10 < h["max_energy_grad"][-1].max()
    # the Hessian of the reduced action (u at its closed-form optimum) by second differences
    eig = diagnostics.hessian_eigenvalues(act, sps[0].Us)
    assert eig.min() > 0
    H = diagnostics.hessian(act, sps[0].Us)
    x0 = diagnostics._pack(sps[0].Us[:-1])
    sizes = [U.shape[0] for U in sps[0].Us[:-1]]

    def S_red(x):
        Us = diagnostics._unpack(x, sizes)
        b = Us[-1].shape[0] - 1.0
        u = (-b + math.sqrt(b * b + 4 * float(torch.trace(Us[-1])))) / 2
        return float(act.at([*Us, torch.tensor([[u]], dtype=F64)]).S)

    k, eps = x0.shape[0], 1e-4
    E = torch.eye(k, dtype=F64) * eps
    fd = torch.tensor([[(S_red(x0 + E[i] + E[j]) - S_red(x0 + E[i] - E[j]) - S_red(x0 - E[i] + E[j])
                         + S_red(x0 - E[i] - E[j])) / (4 * eps * eps) for j in range(k)] for i in range(k)])
    assert float((fd - H).abs().max() / H.abs().max()) < 1e-4


def test_float32_features():
    G = torch.Generator
    kw = dict(data=G().manual_seed(0), test=G().manual_seed(1), heads=G().manual_seed(2), readout=1)
    a = problems.markov_problem(data.MarkovTask(), "all", 30, 20, **kw)
    kw = dict(data=G().manual_seed(0), test=G().manual_seed(1), heads=G().manual_seed(2), readout=1)
    b = problems.markov_problem(data.MarkovTask(), "all", 30, 20, dtype=torch.float32, **kw)
    assert b.Xi.dtype == F64 and float((a.Xi - b.Xi).abs().max() / a.Xi.abs().max()) < 1e-5


def test_options_through_the_run_store(store):
    """A listed 3-layer network, hardmax, per-layer widths and variances, split in-plane noise, state-dependent
    switching, a perturbed start: the run saves the Hessian's eigenvalues and the optimiser's history."""
    from attnlab.core.registry import get
    from attnlab.core.runs import load_result

    exp = get("paths.fig2c")
    cfg = resolve(exp.config, "quick", parse_sets([
        "heads=[[good, {kind: random, perturbation: 0.5}], [different, uniform], [uniform]]", "attention=hardmax",
        "layer_widths=[1, 2, 1, 1]", "variances=[1.2, 0.8, 1.0, 1.1, 0.9]", "sigma_diff=0.5", "sigma_sum=2.0",
        "switch_plus=[0.3, 0.4]", "init=perturbed", "init_strength=0.3", "history_every=4", "sample_widths=[]",
        "P=30", "P_test=40", "widths=[10, 1000]", "gp_layouts=[good]"]))
    rec = store.run(exp, cfg)
    res = load_result(rec.run_dir)[1]
    s, a = res.summary, res.arrays
    assert s["all_converged"] == 1.0 and s["n_paths"] == 4
    assert s["hessian_min_eig_N10"] > 0 and a["theory_hessian_eigs"].shape == (2, 10 + 3 + 1)
    assert a["history_N1000_U1"].shape[1:] == (4, 4) and a["history_N10_max_energy_grad"].shape[1] == 4
    assert {"acc_gp", "acc_gp_good", "history_steps_N10"} <= set(s)
    m = res.metrics
    hist = m[m["source"] == "history"]
    assert set(hist["observable"]) >= {"S", "max_energy_grad"} and set(hist["N"]) == {10.0, 1000.0}
    assert (m[m["observable"] == "hessian_min_eig"]["value"] > 0).all()
    assert (rec.run_dir / "figures" / "fig2c.png").exists()


def test_a_claim_whose_width_was_not_sampled_says_why():
    """A sampling claim on a run without that width returns Measured(nan, why), never a KeyError."""
    import types

    from attnlab.core.claims import Measured, claims
    from attnlab.core.config import resolve
    from attnlab.paths.experiments.markov import FIG2C
    from attnlab.paths.summaries import MarkovSummary

    c = next(c for c in claims("paths") if c.id == "paths.sampling_matches_theory_U_N50")
    cfg = resolve(FIG2C.config, "quick", {"sample_widths": (10,)})  # a run that sampled N = 10 only
    summary = dict.fromkeys(MarkovSummary.keys(cfg), 0.9)
    ctx = types.SimpleNamespace(run=lambda *a, **k: types.SimpleNamespace(summary=summary, config=cfg))
    m = c.measure(ctx)
    assert isinstance(m, Measured) and math.isnan(m.value) and "not sampled" in m.detail
