"""MLM training (stacked models, their independence, eq. (2)'s a = 0 = factored), the pseudo-likelihood L-BFGS
fits, and the paired API of the Potts part."""

import io

import numpy as np
import pytest
import torch

from attnlab.potts.data.potts import PottsSpec
from attnlab.potts.data.sets import potts_dataset
from attnlab.potts.model import potts_representation
from attnlab.potts.theory.optimum import potts_optimum
from attnlab.potts.train.mlm import Optim, simulate, train_stacked, train_vanilla
from attnlab.potts.train.optim import lbfgs
from attnlab.potts.train.pseudolikelihood import fit_lbfgs, pl_objective

SPEC = PottsSpec(L=6, C=8, n_chains=10, burn_in=30, thin=3, M_train=300, M_test=100, beta=1.5)


@pytest.fixture(scope="module")
def data():
    return potts_dataset(SPEC)


def test_a_model_does_not_depend_on_the_models_trained_beside_it(data):
    opt = Optim(epochs=3)
    both = train_stacked("factored", data, seeds=[5, 9], optim=opt).trajectory
    alone = train_stacked("factored", data, seeds=[9], optim=opt).trajectory
    assert np.allclose(both["test_loss"][:, 1], alone["test_loss"][:, 0], atol=1e-6)


def test_eq2_at_a_zero_trains_like_the_factored_layer(data):
    opt = Optim(epochs=2)
    f = train_stacked("factored", data, seeds=[1], optim=opt).trajectory
    p = train_stacked("perturbed", data, seeds=[1], a=[0.0], optim=opt).trajectory
    assert np.allclose(f["test_loss"], p["test_loss"], atol=1e-5)


def test_lbfgs_pl_fit_converges_below_the_true_couplings(data):
    """The fit minimises MLM loss + λ/(2M)||θ||²: at convergence its objective is below that of the exact
    softmax representation of the true model, which is one feasible point."""
    c = data.train[None].repeat(2, 1, 1)
    fit = fit_lbfgs(c, data, lam=1e-2, max_iter=800, gtol=1e-6)
    assert fit.converged.all() and (fit.grad_norm < 1e-6).all()
    W, V = potts_representation(data.potts)
    x_true = torch.cat([W.reshape(1, -1), V.reshape(1, -1)], -1).repeat(2, 1)
    fun = pl_objective(c, 1e-2)
    x_fit = torch.cat([fit.W.reshape(2, -1), fit.V.reshape(2, -1)], -1)
    assert (fun(x_fit)[0] <= fun(x_true)[0] + 1e-9).all()
    assert (fit.test_loss - data.optimal_loss < 0.2).all()


def test_lbfgs_handles_problems_that_stop_at_different_times():
    H = torch.diag(torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64))

    def fun(x):
        scale = torch.tensor([[1.0], [1e-4]], dtype=torch.float64)  # the second problem starts converged
        return 0.5 * (x * (x @ H)).sum(-1) * scale[:, 0], (x @ H) * scale

    res = lbfgs(fun, torch.tensor([[1.0, 1.0, 1.0], [1e-5, 0.0, 0.0]], dtype=torch.float64), gtol=1e-10)
    assert res.converged.all() and res.n_iter[1] <= res.n_iter[0]
    assert res.x[0].abs().max() < 1e-6  # stopped by the gradient or the relative-decrease test


def test_paired_api_shares_the_vocabulary(data):
    sim = simulate(data, "factored", optim=Optim(epochs=2))
    opt = potts_optimum(data, sim.time)
    assert set(sim.names) == set(opt.names)
    assert abs(float(opt["gap"][0, 0])) < 1e-9 and abs(float(opt["corr"][0, 0]) - 1) < 1e-9
    assert (sim["test_loss"] >= opt["test_loss"] - 0.05).all()


def _interrupted(train, stop: int):
    """``train(checkpoint=..., resume=None)`` saved as the run store does (serialised at once) at epoch ``stop``,
    then ``train(resume=state)``: the resumed fit."""
    saved = {}

    def checkpoint(state_fn):
        state = state_fn()
        if state["epoch"] == stop:
            buf = io.BytesIO()
            torch.save(state, buf)
            saved["state"] = buf.getvalue()

    train(checkpoint=checkpoint, resume=None)
    return train(checkpoint=None, resume=torch.load(io.BytesIO(saved["state"]), weights_only=False))


@pytest.mark.parametrize("model", ["factored", "vanilla"])
def test_per_epoch_maps_end_at_the_final_map_and_resume_exactly(data, model):
    L = data.potts.L
    if model == "factored":
        def train(**kw):
            return train_stacked("factored", data, seeds=[3, 4], optim=Optim(epochs=4), **kw)
        shape = (5, 2, L, L)
    else:
        def train(**kw):
            return train_vanilla(data, n_layers=1, seed=3, d=8, eval_every=2,
                                 optim=Optim(lr=1e-2, epochs=5, batch=50), **kw)
        shape = (4, 1, L, L)  # epochs 0, 2, 4, 5
    clean = train(checkpoint=None, resume=None)
    E = clean.epoch_maps
    assert E is not None and tuple(E.shape) == shape and E.dtype == torch.float32
    assert len(clean.trajectory.time) == shape[0]
    torch.testing.assert_close(E[-1], clean.maps.float().cpu(), rtol=0, atol=0)  # the last entry is the final map
    assert (E[0] - E[-1]).abs().max() > 1e-3  # the maps moved: early entries are not the final map
    resumed = _interrupted(train, stop=2)
    torch.testing.assert_close(resumed.epoch_maps, E, rtol=0, atol=0)
    np.testing.assert_array_equal(resumed.trajectory["corr"], clean.trajectory["corr"])
