"""The checkpointed saddle-point solve: the step-by-step L-BFGS-B equals scipy's, and a run killed inside a solve
resumes inside it and ends bit-identical to an uninterrupted run."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from attnlab.core.config import resolve
from attnlab.core.registry import get
from attnlab.paths.theory import lbfgsb
from attnlab.paths.theory import saddle as theory
from attnlab.paths.theory.action import CholeskyParams
from attnlab.paths.theory.diagnostics import History
from attnlab.paths.theory.optimizers import SolveCheckpoint, _Objective

torch.set_num_threads(1)
pytestmark = pytest.mark.skipif(not lbfgsb.AVAILABLE, reason="the resumable L-BFGS-B needs scipy >= 1.15")
OPTIONS = {"maxcor": 50, "ftol": 1e-16, "gtol": 1e-10, "maxiter": 20_000, "maxfun": 40_000}


def _objective(pb, N=10.0):
    act = theory.action(pb, theory.PathKernels(pb.Xi, pb.sigma0), 0.01, N)
    par = CholeskyParams(act.sizes)
    return act, par, par.pack(theory.gp_levels(act.Hs)).numpy()


def test_the_stepwise_driver_gives_scipys_iterates(random_problem):
    """Same x bit for bit, same iterations and evaluations as minimize(method="L-BFGS-B")."""
    act, par, x0 = _objective(random_problem(Hs=(2, 2), P=30, D=12))
    ref_obj, obj = _Objective(act, par, 1e-8, History(act)), _Objective(act, par, 1e-8, History(act))
    ref = minimize(ref_obj, x0, jac=True, method="L-BFGS-B", callback=ref_obj.callback, options=OPTIONS)
    x, message = lbfgsb.LBFGSB(x0, **OPTIONS).run(obj, obj.callback)
    assert ref.nit > 10 and np.array_equal(ref.x, x) and message == ref.message
    assert ref_obj.n_eval == obj.n_eval and ref_obj.n_it == obj.n_it


def test_a_solve_resumed_from_a_saved_state_ends_where_the_whole_solve_ends(random_problem):
    act = _objective(random_problem(Hs=(2, 2), P=30, D=12))[0]
    whole = theory.solve(act, history=2)
    saved = []

    class Killed(Exception):
        pass

    def save(fn):
        saved.append(fn())
        if len(saved) == 7:
            raise Killed

    with pytest.raises(Killed):
        theory.solve(act, history=2, checkpoint=SolveCheckpoint(None, save))
    assert saved[-1]["method"] == "lbfgs" and saved[-1]["iter"] == 7 < whole.n_iter
    resumed = theory.solve(act, history=2, checkpoint=SolveCheckpoint(saved[-1], lambda fn: None))
    assert all(torch.equal(a, b) for a, b in zip(whole.Us, resumed.Us, strict=True))
    assert (whole.n_iter, whole.n_eval, whole.message) == (resumed.n_iter, resumed.n_eval, resumed.message)
    assert all(np.array_equal(whole.history[k], resumed.history[k]) for k in whole.history)


def test_adam_resumes_mid_solve(random_problem):
    act = _objective(random_problem(Hs=(2, 1), P=20, D=8))[0]
    kw = {"method": "adam", "tol": 1e-3, "max_iter": 400, "strict": False}
    whole = theory.solve(act, **kw)
    saved = []

    def save(fn):
        saved.append(fn())
        if len(saved) == 25:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        theory.solve(act, checkpoint=SolveCheckpoint(None, save), **kw)
    resumed = theory.solve(act, checkpoint=SolveCheckpoint(saved[-1], lambda fn: None), **kw)
    assert saved[-1]["iter"] == 25 < whole.n_iter == resumed.n_iter
    assert all(torch.equal(a, b) for a, b in zip(whole.Us, resumed.Us, strict=True))


def test_a_run_killed_inside_a_saddle_solve_resumes_inside_it(killed_and_resumed):
    """fig2c over three widths, killed at a checkpoint write inside the second width's L-BFGS (its 3rd step): the
    resumed run keeps the finished width, goes on from the saved L-BFGS state, and every array equals the
    uninterrupted run's."""
    exp = get("paths.fig2c")
    cfg = resolve(exp.config, "quick", {"P": 40, "P_test": 60, "widths": (10, 100, 1000), "sample_widths": (),
                                        "gp_test_sets": 0, "gp_layouts": (), "history_every": 5})

    def inside_the_second_solve(state) -> bool:
        st = state["partial"][1] if state["partial"] is not None else None
        return bool(st and st["done"] and st["partial"] is not None and st["partial"][1]["iter"] == 3)

    clean, state, resumed = killed_and_resumed(exp, cfg, inside_the_second_solve)
    key, st = state["partial"]
    assert key == "theory" and list(st["done"]) == [(cfg.tau, 1000.0)]  # the widest width is done
    (tau, N), solver = st["partial"]
    assert tau == cfg.tau
    assert N == 100 and solver["method"] == "lbfgs" and solver["iter"] == 3
    assert all(np.array_equal(clean.arrays[k], resumed.arrays[k]) for k in clean.arrays)
