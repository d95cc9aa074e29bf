"""The public code's solve options: single precision (``solve_precision=float32``) and the kernel-invertibility test
(``kernel_check``)."""

import numpy as np
import pytest
import torch

from attnlab.core.config import resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore, load_result
from attnlab.paths.configs import MarkovConfig
from attnlab.paths.theory import kernels
from attnlab.paths.theory import saddle as theory

torch.set_num_threads(1)
NS = [10, 100, 1000]
SMALL = {"P": 40, "P_test": 60, "widths": (10, 100), "sample_widths": (), "gp_test_sets": 0, "gp_layouts": ()}


def _as(pb, dtype):
    return kernels.Problem(pb.Xi.to(dtype), pb.y, pb.Xi_test.to(dtype), pb.y_test, pb.Hs, pb.sigma2)


def test_new_keys_at_their_defaults_keep_the_run_id():
    ref = MarkovConfig().hash("paths.fig2c")
    assert MarkovConfig(solve_precision="float64", kernel_check="off").hash("paths.fig2c") == ref
    assert MarkovConfig(solve_precision="float32").hash("paths.fig2c") != ref


def test_a_float32_solve_moves_U_and_the_accuracy_only_within_float32_round_off(markov_all):
    """Features, kernels, action and predictor in float32 (the public --single_precision) against float64 on the
    Markov task (4 paths, P = 100, P* = 300). Each float32 solve stops at max|∂S/∂U| = g ≤ √ε₃₂; to first order
    it then lies ‖H⁻¹g‖ from the minimiser, so max|ΔU| ≤ 2√d (g₃₂ + g₆₄)/λ_min(H) (H the d×d Hessian in the
    packed entries, whose gradient is at most 2√d max|∂S/∂U| in norm). The accuracy can change only where the
    change of ⟨f⟩ flips a sign: on test points with |⟨f⟩| below max|Δ⟨f⟩|."""
    ref = theory.predict(markov_all, NS, 0.01, hessian=True)
    pb = _as(markov_all, torch.float32)
    th = theory.predict(pb, NS, 0.01, kern=kernels.PathKernels(pb.Xi, pb.sigma0, dtype=torch.float32))
    assert th["U"].dtype == np.float32 and th["converged"].all() and th["max_grad"].max() <= theory.FLOAT32_TOL
    d = ref["hessian_eigs"].shape[1]
    bound = 2 * np.sqrt(d) * (th["max_grad"] + ref["max_grad"]) / ref["hessian_min_eig"]
    assert np.all(np.abs(th["U"] - ref["U"]).max(axis=(1, 2)) <= bound)
    df = np.abs(th["f_mean"] - ref["f_mean"]).max(axis=1)
    fragile = [(np.abs(ref["f_mean"][i]) <= df[i]).mean() for i in range(len(NS))]
    assert np.all(np.abs(th["accuracy"] - ref["accuracy"]) <= fragile)


def test_a_float32_run_solves_in_float32(tmp_path):
    exp = get("paths.fig2c")
    cfg = resolve(exp.config, "quick", {**SMALL, "precision": "float32", "solve_precision": "float32"})
    res = load_result(RunStore(tmp_path).run(exp, cfg).run_dir)[1]
    assert res.arrays["theory_U"].dtype == np.float32
    assert res.summary["all_converged"] == 1.0 and res.summary["max_grad"] <= theory.FLOAT32_TOL


def test_duplicated_examples_make_the_kernel_singular_and_the_check_says_so(markov_all):
    pb = markov_all
    dup = torch.cat([pb.Xi[:50], pb.Xi[:10]])  # 10 examples twice: rank(K) ≤ 50 < P = 60
    kern = kernels.PathKernels(dup, pb.sigma0)
    out = kernels.invertibility(kern, pb.U_gp())
    assert out["kernel_singular"] == 1.0 and out["kernel_min_eig"] <= 60 * 2.3e-16 * out["kernel_max_eig"]
    with pytest.raises(kernels.SingularKernelError, match="60×60 kernel K_GP is singular to working precision"):
        kernels.check_invertibility(kern, pb.U_gp(), 0.01, "kernel")
    # + τI lifts every eigenvalue by τ: regular, and its smallest eigenvalue is τ (to round-off)
    out = kernels.check_invertibility(kern, pb.U_gp(), 0.01, "with_temperature")
    assert out["kernel_singular"] == 0.0 and out["kernel_min_eig"] == pytest.approx(0.01, rel=1e-9)


def test_a_regular_kernel_passes_and_reports_its_spectrum(markov_all):
    kern = kernels.PathKernels(markov_all.Xi, markov_all.sigma0)
    out = kernels.check_invertibility(kern, markov_all.U_gp(), 0.01, "kernel")
    lam = torch.linalg.eigvalsh(kern.K(markov_all.U_gp()))
    assert out["kernel_singular"] == 0.0 and out["kernel_nonpositive"] == 0.0
    assert out["kernel_min_eig"] == float(lam[0]) > 0 and out["kernel_cond"] == float(lam[-1] / lam[0])
    assert kernels.check_invertibility(kern, markov_all.U_gp(), 0.01, "off") == {}


def test_a_run_with_the_check_reports_it_in_the_summary(tmp_path):
    exp = get("paths.fig2c")
    cfg = resolve(exp.config, "quick", {**SMALL, "kernel_check": "with_temperature"})
    s = load_result(RunStore(tmp_path).run(exp, cfg).run_dir)[1].summary
    assert s["kernel_singular"] == 0.0 and s["kernel_min_eig"] >= cfg.tau and np.isfinite(s["kernel_cond"])
