"""Simulation at init against the theory (paired API), and MLM training (per-slot clipping, schedule, resume)."""

import copy

import numpy as np
import pytest
import torch

from attnlab.core.trajectory import max_deviation
from attnlab.signal import data, theory, train
from attnlab.signal.arch import Architecture
from attnlab.signal.train import mlm


def test_simulate_matches_theory_small():
    """A small Fig. 1d/e: random post-LN transformers follow Eq. 19 layer by layer (paired API, one compare call)."""
    arch = Architecture(d=128, T=64, L=12, beta=0.1)
    betas, alphas = torch.tensor([0.1, 0.1, 3.0]), torch.tensor([0.5, 2.0, 1.0])
    sim = train.simulate(arch, n_inits=2, n_seqs=2, rho0=0.05, betas=betas, alphas=alphas,
                         gen=torch.Generator().manual_seed(0))
    th = theory.predict(arch, sim["rho"][0], beta=betas.double(), alpha_sa=alphas.double())
    dev = max_deviation(sim, th, ["rho", "rho_mid", "q"])
    assert dev["rho"] < 0.1 and dev["rho_mid"] < 0.1 and dev["q"] < 1e-4, dev
    assert sim["entropy"][1, 2] < 0.35 < sim["entropy"][1, 0]  # β = 3 collapses the first layer's entropy
    assert sim["rho_std"].shape == sim["rho"].shape == (13, 3)


def test_simulate_chunking_and_corpus_inputs():
    arch = Architecture(d=32, T=16, L=3)
    a = train.simulate(arch, n_inits=4, n_seqs=1, gen=torch.Generator().manual_seed(1))
    b = train.simulate(arch, n_inits=4, n_seqs=1, gen=torch.Generator().manual_seed(1), max_floats=1)
    assert a["rho"].shape == b["rho"].shape  # chunked: same statistics shape, computed slot group by group
    toks = torch.randint(5, 50, (3, 16))
    c = train.simulate(arch, n_inits=2, tokens=toks, vocab=50, gen=torch.Generator().manual_seed(0))
    assert c.meta["n_seqs"] == 3 and 0 <= c["rho"][0, 0] < 0.3


def test_linear_schedule_and_per_slot_clipping():
    assert mlm.linear_schedule(0, 100, 0.05) == 0.0
    assert mlm.linear_schedule(5, 100, 0.05) == 1.0
    assert mlm.linear_schedule(100, 100, 0.05) == 0.0
    p = torch.nn.Parameter(torch.zeros(2, 3))
    p.grad = torch.tensor([[3.0, 4.0, 0.0], [0.3, 0.4, 0.0]])
    norms = mlm.clip_per_slot([p], 1.0)
    assert torch.allclose(norms, torch.tensor([5.0, 0.5]))
    assert torch.allclose(p.grad[0].norm(), torch.tensor(1.0), atol=1e-5)
    assert torch.allclose(p.grad[1], torch.tensor([0.3, 0.4, 0.0]))


def _tiny(steps=40, **kw):
    arch = Architecture(d=16, T=16, L=1, d_ff=16)
    g = torch.Generator().manual_seed(0)
    w = data.repeat_task(256, 16, 12, g)
    opt = mlm.Optim(steps=steps, lr=3e-3, batch=16, log_every=10, n_eval=32)
    return arch, w, opt


def test_slots_do_not_influence_each_other():
    """Slot 0 of a batched run follows the same trajectory whatever slot 1 does (per-slot clipping, AdamW)."""
    arch, w, opt = _tiny(steps=12)
    runs = [mlm.train_mlm(arch, w, 12, opt, betas=[0.5, b], gen_init=torch.Generator().manual_seed(1),
                          gen_data=torch.Generator().manual_seed(2)) for b in (0.5, 8.0)]
    assert runs[0]["eval_loss"].shape == (3, 2)
    assert np.allclose(runs[0]["eval_loss"][:, 0], runs[1]["eval_loss"][:, 0], atol=1e-5)
    assert not np.allclose(runs[0]["eval_loss"][:, 1], runs[1]["eval_loss"][:, 1], atol=1e-3)


def test_micro_batches_take_the_same_step():
    """Gradient accumulation over micro-batches (Fig. 1f at paper scale) gives the one-pass trajectory."""
    arch, w, opt = _tiny(steps=12)
    runs = [mlm.train_mlm(arch, w, 12, mlm.Optim(**{**opt.__dict__, "micro_batch": m}), betas=[0.5, 5.0],
                          gen_init=torch.Generator().manual_seed(1), gen_data=torch.Generator().manual_seed(2))
            for m in (None, 5)]
    assert np.allclose(runs[0]["loss"], runs[1]["loss"], atol=1e-5)
    assert np.allclose(runs[0]["eval_loss"], runs[1]["eval_loss"], atol=1e-5)


def test_training_learns_and_resumes():
    arch, w, opt = _tiny(steps=40)
    full = mlm.train_mlm(arch, w, 12, opt, betas=[0.5], gen_init=torch.Generator().manual_seed(1),
                         gen_data=torch.Generator().manual_seed(2))
    assert full["eval_loss"][-1, 0] < full["eval_loss"][0, 0] - 0.05
    saved = []
    gd = torch.Generator().manual_seed(2)
    mlm.train_mlm(arch, w, 12, mlm.Optim(**{**opt.__dict__, "steps": 40}), betas=[0.5],
                  gen_init=torch.Generator().manual_seed(1), gen_data=gd,
                  checkpoint=lambda fn: saved.append(copy.deepcopy((fn(), gd.get_state()))) if len(saved) < 2 else None)
    state, gstate = saved[1]  # interrupted after step 20: resume with the data stream where it was
    gd2 = torch.Generator()
    gd2.set_state(gstate)
    resumed = mlm.train_mlm(arch, w, 12, opt, betas=[0.5], gen_init=torch.Generator().manual_seed(99),
                            gen_data=gd2, resume=state)
    assert np.allclose(resumed["eval_loss"], full["eval_loss"], atol=1e-5)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_entropy_collapse_blocks_training_ac11():
    """Fig. 4 on the repeat task (1000 steps, 2 seeds): β = 0.5 learns the repeat task, β = 5 does not."""
    arch = Architecture(d=64, T=64, L=1, d_ff=64)
    w = data.repeat_task(20000, 64, 64, torch.Generator().manual_seed(0))
    tr = mlm.train_mlm(arch, w, 64, mlm.Optim(steps=1000), betas=[0.5, 5.0, 0.5, 5.0],
                       gen_init=torch.Generator().manual_seed(1), gen_data=torch.Generator().manual_seed(2))
    final = tr["eval_loss"][-1]
    assert final[0] < final[1] - 0.8 and final[2] < final[3] - 0.8
    assert tr["entropy"][0, 1, 0] < 0.2


def test_pre_ln_simulation_tracks_norm_and_cosine():
    """The pre-LN extension (not in the paper): the residual norm q and the cosine follow the (q, p) recursion."""
    arch = Architecture(d=256, T=64, L=3, beta=0.1, ln_position="pre")
    sim = train.simulate(arch, n_inits=4, n_seqs=2, rho0=0.05, gen=torch.Generator().manual_seed(0))
    th = theory.predict(arch, sim["rho"][0])
    assert np.abs(sim["q"][:, 0] - th["q"][:, 0]).max() < 0.02
    assert np.abs(sim["rho"][:, 0] - th["rho"][:, 0]).max() < 0.02
    assert sim["q"][-1, 0] > 1.08  # no final LN: the stream grows


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_rank_collapse_blocks_deep_training_ac12():
    """Fig. 1f, rank-collapse arm: L = 8, β = 0.1, 1000 steps; α_SA = 0.1 (collapsed) vs 3.0 (propagates)."""
    arch = Architecture(d=64, T=64, L=8, d_ff=64, beta=0.1)
    w = data.repeat_task(20000, 64, 64, torch.Generator().manual_seed(0))
    tr = mlm.train_mlm(arch, w, 64, mlm.Optim(steps=1000), betas=[0.1], alphas=[0.1, 3.0],
                       gen_init=torch.Generator().manual_seed(1), gen_data=torch.Generator().manual_seed(2))
    final = tr["eval_loss"][-1]
    assert final[1] < final[0] - 0.5


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_entropy_collapse_blocks_deep_training_ac12():
    """Fig. 1f, entropy-collapse arm: L = 4, α = 1, 1000 steps; β = 5 stays frozen and untrained, β = 0.5 learns."""
    arch = Architecture(d=64, T=64, L=4, d_ff=64)
    w = data.repeat_task(20000, 64, 64, torch.Generator().manual_seed(0))
    tr = mlm.train_mlm(arch, w, 64, mlm.Optim(steps=1000), betas=[5.0, 0.5],
                       gen_init=torch.Generator().manual_seed(1), gen_data=torch.Generator().manual_seed(2))
    final = tr["eval_loss"][-1]
    assert final[1] < final[0] - 2.0
    assert abs(tr["entropy"][-1, 0, 0] - tr["entropy"][0, 0, 0]) < 0.05
