"""The one-block transformer of paper 4 (paper §2; checks B1-B6) plus variants, hooks, vocabulary growth."""

import math

import pytest
import torch

from attnlab.clustering import model as M
from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, forward, init_params
from attnlab.clustering.theory.construction import build_clustering_head
from attnlab.core.config import ConfigError

torch.set_num_threads(1)
F64 = torch.float64
PAPER = {"E", "P", "q", "V", "W", "U"}


def _x(p, N, B=5, seed=0):
    return torch.randint(0, p, (B, N), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------------------------- B1
@pytest.mark.parametrize(("d", "h", "expected"), [(2, 8, 66), (64, 256, 37_824)])
def test_b1_parameter_count(d, h, expected):
    spec = ModelSpec(p=2, N=12, d=d, h=h)
    params = init_params(spec, [0, 1])
    assert set(params) == PAPER                                     # no bias tensors by default
    assert spec.n_params == expected
    assert sum(t[0].numel() for t in params.values()) == expected
    assert d * (1 + d + 2 * h) == expected - 2 * d - 12 * d         # the paper's m for θ = (q, V, W, U)


def test_b1_mlp_bias_adds_bias_tensors():
    spec = ModelSpec(p=2, N=12, d=2, h=8, mlp_bias=True)
    params = init_params(spec, [0])
    assert set(params) == PAPER | {"bW", "bU"}
    assert params["bW"].shape == (1, 8) and params["bU"].shape == (1, 2)
    assert spec.n_params == 66 + 8 + 2 == sum(t[0].numel() for t in params.values())
    assert ModelSpec(d=2).h == 8                                    # h = 4d by default


# ----------------------------------------------------------------------------------------------- B2
def _gelu(u: float) -> float:
    return u * 0.5 * (1 + math.erf(u / math.sqrt(2)))


def _naive_logits(params, s, sentence, spec):
    """Eqs (token embedding) … (logits) written literally for one seed and one sentence, in python floats."""
    t_ = lambda name: params[name][s].tolist()  # noqa: E731
    E, P, q, V, W, U = (t_(n) for n in ("E", "P", "q", "V", "W", "U"))
    d = spec.d

    def norm(v, gain_name):
        if spec.norm == "rmsnorm":
            g = t_(gain_name) if gain_name in params else [1.0] * d
            scale = 1 / math.sqrt(sum(c * c for c in v) / d + spec.norm_eps)
            return [c * scale * gi for c, gi in zip(v, g, strict=True)]
        r = math.sqrt(sum(c * c for c in v))
        return [c / r for c in v]

    z = [norm([E[tok][i] + P[t][i] for i in range(d)], "g_attn") for t, tok in enumerate(sentence)]
    scores = [sum(zt[i] * q[i] for i in range(d)) / math.sqrt(d) for zt in z]
    m = max(scores)
    w = [math.exp(c - m) for c in scores]
    a = [c / sum(w) for c in w]
    vz = [[sum(V[i][j] * zt[j] for j in range(d)) for i in range(d)] for zt in z]
    xi = [sum(a[t] * vz[t][i] for t in range(len(z))) for i in range(d)]
    xin = norm(xi, "g_mlp")
    hid = [_gelu(sum(W[n][i] * xin[i] for i in range(d)) + (t_("bW")[n] if "bW" in params else 0.0))
           for n in range(spec.h)]
    psi = [xi[i] + sum(U[i][n] * hid[n] for n in range(spec.h)) + (t_("bU")[i] if "bU" in params else 0.0)
           for i in range(d)]
    return [sum(E[v][i] * psi[i] for i in range(d)) for v in range(len(E))]


@pytest.mark.parametrize("d", [2, 3, 8])
@pytest.mark.parametrize("p", [2, 3])
@pytest.mark.parametrize("variant", ["paper", "rmsnorm_bias"])
def test_b2_forward_equals_naive_loop(d, p, variant):
    kw = {"norm": "rmsnorm", "norm_gain": True, "mlp_bias": True} if variant == "rmsnorm_bias" else {}
    spec = ModelSpec(p=p, N=7, d=d, **kw)
    params = init_params(spec, [0, 1, 2], dtype=F64)
    for name in ("g_attn", "g_mlp", "bW", "bU"):                    # make gains / biases non-trivial
        if name in params:
            params[name] = params[name] + 0.3 * torch.randn(params[name].shape, dtype=F64)
    x = _x(p, 7, B=4, seed=d)
    out = forward(params, x, spec)["logits"]
    naive = torch.tensor([[_naive_logits(params, s, x[b].tolist(), spec) for b in range(4)] for s in range(3)],
                         dtype=F64)
    assert float((out - naive).abs().max()) < 1e-12
    for s in range(3):                                              # several seeds at once == each seed alone
        alone = forward(M.select(params, s), x, spec)["logits"]
        assert float((alone[0] - out[s]).abs().max()) < 1e-13


# ----------------------------------------------------------------------------------------------- B3, B4
def test_b3_forward_invariants():
    spec = ModelSpec(p=3, N=12, d=4)
    params = init_params(spec, [0, 1], dtype=F64)
    acts = forward(params, _x(3, 12, B=16), spec)
    assert float((acts["z"].norm(dim=-1) - 1).abs().max()) < 1e-6
    assert float((acts["attn"].sum(-1) - 1).abs().max()) < 1e-12
    assert set(acts) == set(M.ACTIVATIONS)
    xi = acts["xi"]
    mlp = torch.nn.functional.gelu((xi / xi.norm(dim=-1, keepdim=True)) @ params["W"].transpose(-1, -2))
    expected = mlp @ params["U"].transpose(-1, -2)
    assert float((acts["psi"] - xi - expected).abs().max()) < 1e-12
    assert torch.allclose(acts["xi"], (acts["attn"].unsqueeze(-1) * acts["z"]).sum(-2) @ params["V"].transpose(-1, -2))


def test_b4a_collapsed_positions_give_permutation_invariance():
    k = 5
    spec = ModelSpec(p=3, N=12, d=3)
    params = init_params(spec, [4, 5], dtype=F64)
    params["P"][:, 1:k] = params["P"][:, :1]
    x = _x(3, 12, B=32, seed=1)
    base = forward(params, x, spec)["logits"]
    g = torch.Generator().manual_seed(2)
    for _ in range(5):
        perm = torch.randperm(k, generator=g)
        xp = x.clone()
        xp[:, :k] = x[:, perm]
        assert float((forward(params, xp, spec)["logits"] - base).abs().max()) < 1e-12


def test_b4b_construction_is_suffix_invariant():
    params, spec = build_clustering_head(2, 12, 5, 2, 8)
    x, _, _ = Task(2, 12, 5).probe_grid()                         # 32 prefixes × 128 suffixes, prefix-major
    logits = forward(params, x, spec)["logits"][0].view(32, 128, 2)
    assert float((logits.amax(1) - logits.amin(1)).max()) < 1e-6


# ----------------------------------------------------------------------------------------------- B5
def test_b5_init_statistics():
    d = 64
    spec = ModelSpec(p=2, N=12, d=d)                                # h = 256
    params = init_params(spec, list(range(8)))
    for name in ("E", "P"):
        t = params[name]
        assert abs(float(t.mean())) < 0.1 and 0.9 <= float(t.std()) <= 1.1
    for name, bound in (("V", 1 / math.sqrt(d)), ("W", 1 / math.sqrt(d)), ("U", 1 / math.sqrt(spec.h))):
        t = params[name]
        assert float(t.abs().max()) <= bound and float(t.abs().max()) > 0.9 * bound
    assert float(params["q"].std()) > 0.5                           # q ~ N(0, 1)
    assert float(init_params(ModelSpec(d=4, q_init="uniform"), [0])["q"].abs().max()) <= 0.5
    assert not init_params(ModelSpec(d=4, q_init="zeros"), [0])["q"].any()
    for n in PAPER:                                                 # different seeds differ, same seed repeats
        assert not torch.equal(params[n][0], params[n][1])
        assert torch.equal(params[n][:2], init_params(spec, [0, 1])[n])


def test_b5_per_parameter_streams():
    a = init_params(ModelSpec(p=2, N=12, d=8, h=32), [0, 7])
    b = init_params(ModelSpec(p=2, N=12, d=8, h=16), [0, 7])
    for n in ("E", "P", "q", "V"):
        assert torch.equal(a[n], b[n])
    c = init_params(ModelSpec(p=2, N=12, d=8, h=32), [0, 7], dtype=F64)
    assert torch.equal(c["W"].float(), a["W"])                      # draws are dtype-independent


# ----------------------------------------------------------------------------------------------- B6
def _jac_norm(fn, x, eps):
    cols = []
    for i in range(x.shape[-1]):
        e = torch.zeros_like(x)
        e[i] = eps
        cols.append((fn(x + e) - fn(x - e)) / (2 * eps))
    return float(torch.linalg.matrix_norm(torch.stack(cols, -1), ord=2))


def _direction(seed=0, d=3):
    u = torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=F64)
    return u / u.norm()


def test_b6_smooth_equals_sphere_outside_unit_ball():
    g = torch.Generator().manual_seed(0)
    v = torch.randn(2000, 3, generator=g, dtype=F64)
    v = v / v.norm(dim=-1, keepdim=True) * (1 + 9 * torch.rand(2000, 1, generator=g, dtype=F64))
    v[0] = v[0] / v[0].norm()                                       # exactly on the unit sphere
    sphere, smooth = M.normalize(v, ModelSpec(norm="sphere")), M.normalize(v, ModelSpec(norm="smooth"))
    # equal up to one rounding (x/r vs x·(1/r)); bitwise equality is not guaranteed by model.normalize
    assert float((sphere - smooth).abs().max()) <= 2.5e-16
    inside = 0.5 * v[1:5] / v[1:5].norm(dim=-1, keepdim=True)
    assert float(M.normalize(inside, ModelSpec(norm="smooth")).norm(dim=-1).max()) < 1   # s(0.5) = 0.5


@pytest.mark.parametrize("r", [1e-3, 1e-1, 1.0, 10.0])
def test_b6_sphere_jacobian_norm_is_inverse_radius(r):
    spec = ModelSpec(norm="sphere")
    x = r * _direction()
    assert math.isclose(_jac_norm(lambda v: M.normalize(v, spec), x, r * 1e-6), 1 / r, rel_tol=1e-3)


def test_b6_smooth_jacobian_is_bounded():
    spec = ModelSpec(norm="smooth")
    norms = [_jac_norm(lambda v: M.normalize(v, spec), float(r) * _direction(i), float(r) * 1e-6)
             for i, r in enumerate(torch.logspace(-4, 1, 40, dtype=F64))]
    assert max(norms) <= 1.5 + 1e-6
    assert max(norms) > 1.4                                         # attained near r = 1/2 (s' = 6r − 6r²)
    assert norms[0] < 1e-3                                          # ≈ 3r near the origin, no blow-up


def test_rmsnorm_variant():
    spec = ModelSpec(p=2, N=12, d=4, norm="rmsnorm", norm_gain=True)
    params = init_params(spec, [0], dtype=F64)
    assert set(params) == PAPER | {"g_attn", "g_mlp"} and torch.equal(params["g_attn"], torch.ones(1, 4, dtype=F64))
    assert spec.n_params == ModelSpec(p=2, N=12, d=4).n_params + 8
    params["g_attn"] = params["g_attn"] * 2.0
    acts = forward(params, _x(2, 12), spec)
    e = acts["e"]
    assert torch.allclose(acts["z"], 2 * e / torch.sqrt(e.pow(2).mean(-1, keepdim=True) + 1e-5), atol=1e-14)
    assert torch.allclose(acts["z"].norm(dim=-1), 2 * math.sqrt(4) * e.norm(dim=-1) /
                          torch.sqrt(e.pow(2).sum(-1) + 4e-5), atol=1e-12)
    xi = acts["xi"]
    assert torch.allclose(acts["xi_n"], xi / torch.sqrt(xi.pow(2).mean(-1, keepdim=True) + 1e-5), atol=1e-14)


# ----------------------------------------------------------------------------------------------- hooks, vocab, x
def test_hooks_can_patch_and_read():
    spec = ModelSpec(p=2, N=12, d=2)
    params = init_params(spec, [0, 1], dtype=F64)
    x = _x(2, 12, B=8)
    base = forward(params, x, spec)
    seen = {}

    def read(name, t):
        seen[name] = t.clone()

    def patch(target):
        return lambda name, t: torch.zeros_like(t) if name == target else None

    same = forward(params, x, spec, hook=read)
    assert list(seen) == [M.HOOK_NAMES[k] for k in base] and set(base) == set(M.HOOK_NAMES)
    assert all(torch.equal(seen[M.HOOK_NAMES[k]], v) and torch.equal(same[k], v) for k, v in base.items())
    assert torch.equal(seen["blocks.0.attn.hook_pattern"], base["attn"])
    assert torch.equal(seen["blocks.0.hook_resid_post"], base["psi"])
    patched = forward(params, x, spec, hook=patch("blocks.0.attn.hook_pattern"))
    assert not patched["attn"].any() and not torch.allclose(patched["logits"], base["logits"])
    uniform = forward(params, x, spec, hook=patch("blocks.0.attn.hook_attn_scores"))
    assert torch.allclose(uniform["attn"], torch.full_like(uniform["attn"], 1 / 12))
    # a hook forces the per-token path: the embedding is seen even where training would skip it
    seen.clear()
    forward(params, x, spec, hook=read, tokens=False)
    assert "hook_embed" in seen and "blocks.0.ln1.hook_normalized" in seen


def test_grow_vocab():
    spec = ModelSpec(p=2, N=12, d=2)
    params = init_params(spec, [0, 1])
    grown, new_spec = M.grow_vocab(params, spec, 3, [0, 1])
    assert new_spec.p == 3 and new_spec.n_emb == 3 and new_spec.d == 2 and new_spec.h == 8
    assert grown["E"].shape == (2, 3, 2)
    assert torch.equal(grown["E"][:, :2], params["E"])
    assert not torch.equal(grown["E"][0, 2], grown["E"][1, 2])      # each seed draws its own new row
    for n in PAPER - {"E"}:
        assert torch.equal(grown[n], params[n])
    assert torch.equal(M.grow_vocab(params, spec, 3, [0, 1])[0]["E"], grown["E"])   # reproducible
    assert forward(grown, _x(3, 12), new_spec)["logits"].shape == (2, 5, 3)
    for bad in (1,):                                                     # p' = p is allowed (finetuning on p)
        with pytest.raises(ConfigError, match="p_new"):
            M.grow_vocab(params, spec, bad, [0, 1])


def test_per_seed_inputs_match_shared_inputs():
    spec = ModelSpec(p=3, N=12, d=3)
    params = init_params(spec, [0, 1, 2], dtype=F64)
    x = _x(3, 12, B=6)
    shared = forward(params, x, spec)
    expanded = forward(params, x.expand(3, 6, 12), spec)
    for name in M.ACTIVATIONS:
        assert torch.allclose(shared[name], expanded[name], atol=1e-14, rtol=0)
    xs = torch.stack([_x(3, 12, B=6, seed=s) for s in range(3)])  # different sentences per seed
    own = forward(params, xs, spec)["logits"]
    y = Task(3, 12, 5).labels(xs)
    per_seed_loss = M.loss_per_seed(params, xs, y, spec)
    for s in range(3):
        alone = M.select(params, s)
        assert torch.allclose(own[s], forward(alone, xs[s], spec)["logits"][0], atol=1e-14, rtol=0)
        assert torch.allclose(per_seed_loss[s], M.loss_per_seed(alone, xs[s], y[s], spec)[0], atol=1e-14)
