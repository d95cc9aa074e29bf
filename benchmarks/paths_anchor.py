"""Runs the paper's public code (tiberilor/attention-paths-interplay) on its 4-path Markov task and exports what
attnlab's parity check and benchmark need. Run by benchmarks/paths.py with the public code's own Python
(its requirements: torch, einops, numpy, jax, numpyro, arviz); nothing of attnlab is imported here.

    python benchmarks/paths_anchor.py ANCHOR_REPO OUT.npz P "N1 N2 Na" TAU "s0 s1 s2 sa" [P_TEST]

How it is run: the repository's own script
``hidden_markov_chain_classification/4paths/data/all_paths/without_samples/TRAIN_conv_sum_heads_binary_regression_
MARKOV_OPTION_E_TWO_LAYERS.py`` is executed unmodified (``runpy``) with the flags of the LOOP_RUN script next to it
(seed=7: main heads seeds 127/217, random "blank" heads 147/247 with perturbation 1, β = 10, all three noise
strengths 1, T = 30, N0 = 200, lr 0.1, gradient tolerance 1e-5, 50 000 epochs at most, float64, CPU), with P, the
widths, τ and the variances set here. Only the environment is adapted: torchvision (imported by the library for
its image datasets, unused here) is replaced by an empty module when it cannot be imported, and
``torch.cuda.max_memory_allocated`` (called at the end of the script) returns 0 on a CPU-only torch. The script's
wall and CPU times are measured around ``runpy`` (the library imported before, so jax's import is not counted); its
training-data preparation is timed again on its own so that the benchmark can also quote tokens → U.
Afterwards the library's own methods give the test predictions (P_TEST sequences from its test seed) and the
Hessian of its action at the solution (its ``compute_loss_action_for_hessian`` under torch's autograd Hessian).
"""

import contextlib
import glob
import io
import os
import runpy
import sys
import tempfile
import time
import types

import numpy as np
import torch

repo, out, P = sys.argv[1], sys.argv[2], int(sys.argv[3])
widths, tau = [int(n) for n in sys.argv[4].split()], float(sys.argv[5])
variances = [float(v) for v in sys.argv[6].split()]
P_test = int(sys.argv[7]) if len(sys.argv) > 7 else 1000
here = os.path.join(repo, "hidden_markov_chain_classification/4paths/data/all_paths/without_samples")
sys.path.insert(0, here)
try:
    import torchvision  # noqa: F401
except Exception:  # an absent or mismatched torchvision: the Markov task never uses it
    tv = types.ModuleType("torchvision")
    tv.datasets, tv.transforms = types.ModuleType("datasets"), types.ModuleType("transforms")
    tv.transforms.ToTensor = None
    sys.modules.update({"torchvision": tv, "torchvision.datasets": tv.datasets,
                        "torchvision.transforms": tv.transforms})
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import LIB_convergent_summation_heads as lib

seed, beta, pert = 7, 10.0, 1.0
tmp = tempfile.mkdtemp() + "/"
flags = f"""--force_cpu --p_a_plus 0.7 --p_a_minus 0.7 --p_b_plus 0.3 --p_b_minus 0.3
--perpendicular_noise_strength 1.0 --parallel_noise_strength 1.0 --out_of_plane_noise_strength 1.0
-P {P} --partial_width 200 -T 30 -N {' '.join(map(str, widths))} --temperature {tau}
--variances {' '.join(map(str, variances))} --seed 3
--dont_store_checkpoint -lr 0.1 --epochs 50000 --gradient_tolerance 1e-5 --scheduler_patience 100000
--lr_reduce_factor 0.1 --order_parameter_perturbation_strength 0.0 --order_parameter_scale 1.0
--order_parameter_seed 10
--main_head_first_layer_style same_token --main_head_first_layer_shift -1.0 --main_head_first_layer_beta {beta}
--main_head_first_layer_seed {120 + seed}
--betas_blank_attention_first_layer {beta} --seeds_blank_attention_first_layer {140 + seed}
--features_perturbation_blank_attention_first_layer {pert} --positions_perturbation_blank_attention_first_layer {pert}
--features_positions_cross_perturbation_blank_attention_first_layer {pert}
--main_head_second_layer_style uniform_attention --main_head_second_layer_shift -1.0
--main_head_second_layer_beta {beta} --main_head_second_layer_seed {210 + seed}
--betas_blank_attention_second_layer {beta} --seeds_blank_attention_second_layer {240 + seed}
--features_perturbation_blank_attention_second_layer {pert} --positions_perturbation_blank_attention_second_layer {pert}
--features_positions_cross_perturbation_blank_attention_second_layer {pert}
--number_steps_store_scalars 500 --number_steps_store_tensors 500 --number_steps_store_checkpoint 500
--number_steps_print_info 50 --results_storage_location {tmp}""".split()
torch.cuda.max_memory_allocated = lambda *a, **k: 0
sys.argv = ["TRAIN.py", *flags]
log = io.StringIO()
t0, c0 = time.perf_counter(), time.process_time()
with contextlib.redirect_stdout(log):
    runpy.run_path(glob.glob(os.path.join(here, "TRAIN_*.py"))[0], run_name="__main__")
seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
steps = [int(line.split()[-1]) for line in log.getvalue().splitlines() if "terminating training at step" in line]
res = torch.load(glob.glob(tmp + "*RESULTS*.pkl")[0], weights_only=False)
model, info = res["model"], res["dataset_info"]
quiet = contextlib.redirect_stdout(io.StringIO())
with quiet:
    t0 = time.perf_counter()
    Xtr, ytr, _ = lib.prepare_dataset(None, dict(info, v_plus=None, v_minus=None), train=True)
    data_seconds = time.perf_counter() - t0
    Xte, yte, _ = lib.prepare_dataset(None, dict(info, number_examples=P_test, v_plus=None, v_minus=None), train=False)
    model.load(Xtr, info)
    mean, var = model.compute_predictor_statistics(Xte, ytr)
    model.store_training_labels(ytr)
    H = torch.autograd.functional.hessian(model.compute_loss_action_for_hessian,
                                          model.compute_packed_order_parameters().detach())
    energy, entropy = model.compute_loss_action(ytr, return_energy_entropy=True)
xi = model.attentioned_input  # (P, D, n) = √(σ0²/(D n)) ξ
D, n = xi.shape[1], xi.shape[2]
Us = [u.detach().numpy() for u in model.compute_symmetrized_order_parameters()]  # [U_L (small), ..., U_1]
np.savez(out, X_train=Xtr.transpose(1, 2).numpy(), y_train=ytr.numpy(), X_test=Xte.transpose(1, 2).numpy(),
         y_test=yte.numpy(), heads1=model.w_attention_weights[0].numpy(), heads2=model.w_attention_weights[1].numpy(),
         U1=Us[-1], U2=Us[0], u=float(model.current_scalar_order_parameter),
         features=(xi.detach() * np.sqrt(D * n / variances[0])).transpose(1, 2).numpy(), S=float(energy + entropy),
         test_mean=mean.numpy(), test_var=var.numpy(), accuracy=float((torch.sign(mean) == yte).double().mean()),
         hessian_eigs=torch.linalg.eigvalsh(H).numpy(), seconds=seconds, cpu_seconds=cpu_seconds,
         data_seconds=data_seconds, threads=torch.get_num_threads(), python_version=sys.version.split()[0],
         adam_steps=steps[0] if steps else -1, P=P, widths=np.asarray(widths, float), tau=tau,
         variances=np.asarray(variances), torch_version=torch.__version__)
