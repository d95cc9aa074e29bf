"""Fig. 2 of paper 2: factored attention against vanilla transformers on Potts data (Fig. 2a-c), and the
mixing a of positions into keys and values of Eq. (2) (Fig. 2d): configs, runs and declarations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field, field_validator, model_validator
from scipy.stats import spearmanr

from attnlab.core.experiment import Experiment, Result
from attnlab.core.outputs import declare
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Unit, run_units
from attnlab.potts import costs, figures, memory, metrics
from attnlab.potts.configs import TINY_DATA, Model, PottsDataConfig, Training
from attnlab.potts.data.potts import colour_frequencies
from attnlab.potts.experiments.common import final_metrics, potts_data
from attnlab.potts.summaries import Fig2dSummary, Fig2Summary
from attnlab.potts.theory.optimum import potts_optimum
from attnlab.potts.train.mlm import Optim, progress_arrays, train_stacked, train_vanilla

STUDY = "potts"


class Fig2Config(PottsDataConfig, Training):
    """Fig. 2a-c: factored attention vs vanilla transformers with 1 and 3 layers on the same Potts data."""

    models: tuple[Model, ...] = Field(("factored", "vanilla1", "vanilla3"), min_length=1,
                                      description="architectures trained: factored attention (Eq. (4)), the vanilla "
                                                  "transformer with 1 or 3 layers")
    vanilla_lr: float = Field(1e-3, gt=0, le=10, description="Adam lr of the vanilla transformers (docs note 3)")
    vanilla_epochs: int = Field(60, ge=1, le=100_000, description="training epochs of the vanilla transformers")
    vanilla_mask: Literal["random", "all"] = Field("random", description="one random masked site per sequence, "
                                                                           "or all L copies (exact MLM)")
    head: Literal["uva", "linear"] = Field("uva", description="vanilla output head (App. 'Numerical details')")
    d: int = Field(20, ge=2, le=512, description="embedding dimension of the vanilla transformer")
    eval_every: int = Field(1, ge=1, le=100_000, description="epochs between evaluations of the vanilla models")
    n_eval: int | None = Field(None, ge=2, le=1_000_000,
                               description="test sequences of the per-epoch vanilla evaluation (None: all)")
    scales = {"quick": {"vanilla_epochs": 40, "eval_every": 2, "n_eval": 300}, "paper": {"seeds": 3}}


class Fig2dConfig(PottsDataConfig, Training):
    """Fig. 2d: test loss vs the position/embedding mixing a of Eq. (2), several seeds per a, one computation."""

    a_values: tuple[float, ...] = Field((0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0), min_length=2,
                                        description="mixings a >= 0 of positions and embeddings in Eq. (2) "
                                                    "(a = 0: factored attention)",
                                        json_schema_extra={"allowed": "two or more numbers, each ≥ 0"})
    seeds: int = Field(3, ge=1, le=64,
                       description="independent models (initialisations) per a, trained in one computation")
    scales = {"quick": {"a_values": (0.0, 0.1, 0.3, 1.0), "epochs": 30}, "paper": {}}

    @field_validator("a_values")
    @classmethod
    def _a_nonnegative(cls, v):
        if any(a < 0 for a in v):
            raise ValueError(f"key 'a_values' = {list(v)}: the mixing a of eq. (2) must be >= 0")
        return v

    @model_validator(mode="after")
    def _positions_fit(self):
        if self.L > self.C:
            raise ValueError(f"key 'L' = {self.L}: eq. (2) uses one-hot positions in R^d with d = C, so L <= C "
                             f"(C = {self.C})")
        return self


# vanilla models are evaluated at epoch 0, every eval_every epochs and at the last
VANILLA_T = "1 + vanilla_epochs // eval_every + (vanilla_epochs % eval_every > 0)"


TRAJ = "corr gap recon_err test_loss train_loss"  # the observables of every training (train.OBSERVABLES)


def fig2_arrays(c) -> dict:
    """The optimum's two-point line (epochs 0 and the last), then each model: S stacked models (factored: one per
    seed; a vanilla transformer: 1) evaluated at T epochs (factored: every epoch)."""
    out: dict = {"J": ("L", "L"), "optimum/time": (2,), " ".join(f"optimum/{k}" for k in TRAJ.split()): (2, 1)}
    for m in c.models:
        S, T = ("seeds", "epochs + 1") if m == "factored" else (1, VANILLA_T)
        out.update({f"{m}/traj_time": (T,), " ".join(f"{m}/traj_{k}" for k in TRAJ.split()): (T, S),
                    f"{m}/map": (S, "L", "L"), f"{m}/maps": (T, S, "L", "L")})
        if m == "factored":
            out.update({"factored/V": ("seeds", "C", "C"), "factored/W": ("seeds", "L", "L")})
        else:  # the map of each layer, the final test loss on the whole test set
            out.update({f"{m}/layer_maps": (int(m[-1]), "L", "L"), f"{m}/final_test": (1,)})
    return out


def _epochs_to(traj: Trajectory, gap: float) -> float:
    """First epoch at which the mean gap to the optimum falls below ``gap`` (NaN: never)."""
    g = traj["gap"].mean(-1)
    hit = np.flatnonzero(g < gap)
    return float(traj.time[hit[0]]) if len(hit) else float("nan")


def fig2(config: Fig2Config, ctx: RunContext) -> Result:
    data = potts_data(config, ctx)
    J = data.potts.J

    def compute(u: Unit) -> dict[str, np.ndarray]:
        model, resume = u.key, u.resume

        def save(state: Callable[[], Any]) -> None:  # checkpoint, and show the models so far to live viewers
            u.save(state)
            ctx.publish(lambda: {**{f"{m}/{k}": v for m, a in u.done.items() for k, v in a.items()},
                                 **{f"{model}/{k}": v for k, v in progress_arrays(state()).items()},
                                 "J": J.cpu().numpy(), "optimum/test_loss": np.array([data.optimal_loss])})

        if model == "factored":
            with ctx.progress(config.epochs, "factored attention") as bar:
                seeds = [ctx.seed("init", k) % 2**62 for k in range(config.seeds)]
                fit = train_stacked("factored", data, seeds=seeds, optim=config.optim(), attn=config.attn,
                                    progress=lambda e, T: bar.update(e), checkpoint=save, resume=resume)
            extra = {"V": fit.params["V"].cpu().numpy(), "W": fit.params["W"].cpu().numpy()}
        else:
            optim = Optim("adam", config.vanilla_lr, config.vanilla_epochs, config.batch, config.schedule)
            with ctx.progress(config.vanilla_epochs, f"vanilla transformer, {model[-1]} layer(s)") as bar:
                fit = train_vanilla(data, n_layers=int(model[-1]), seed=ctx.seed("init") % 2**62, optim=optim,
                                    d=config.d, head=config.head, mask=config.vanilla_mask,
                                    eval_every=config.eval_every, n_eval=config.n_eval,
                                    progress=lambda e, T: bar.update(e), checkpoint=save, resume=resume)
            extra = {"layer_maps": fit.extra["layer_maps"].numpy(), "final_test": np.array([fit.extra["test_loss"]])}
        maps = {} if fit.epoch_maps is None else {"maps": fit.epoch_maps.cpu().numpy()}  # (E, S, L, L) float32
        return {**fit.trajectory.to_arrays("traj_"), "map": fit.maps.cpu().numpy(), **maps, **extra}

    done = run_units(ctx, list(config.models), compute, "architectures")
    arrays, frames = {}, []
    summary: dict[str, float] = {"optimal_loss": data.optimal_loss, **data.diagnostics}
    last = 0.0
    for model in config.models:
        a = done[model]
        traj = Trajectory.from_arrays(a, "traj_", time_name="epoch", source=model)
        arrays.update({f"{model}/{k}": v for k, v in a.items()})
        frames.append(traj.to_frame().assign(model=model))
        final_test = float(a["final_test"][0]) if "final_test" in a else float(traj["test_loss"][-1].mean())
        summary[f"{model}_test"] = final_test
        summary[f"{model}_gap"] = final_test - data.optimal_loss
        summary[f"{model}_epochs_to_gap_0.1"] = _epochs_to(traj, 0.1)
        summary.update(final_metrics(model, torch.as_tensor(a["map"]), J.cpu()))
        last = max(last, float(traj.time[-1]))
        if model == "factored":
            A = torch.as_tensor(a["map"])
            iso = (J.cpu().sum(1) == 0).nonzero().flatten()
            summary["factored_isolated_sink"] = float(A[:, iso, iso].min()) if len(iso) else float("nan")
            summary["factored_value_corr"] = float(metrics.value_corr(
                torch.as_tensor(a["V"]), data.potts.U.cpu(), colour_frequencies(data.train.cpu(), data.potts.C)).mean())
    opt = potts_optimum(data, np.linspace(0, last, 2))
    arrays.update({f"optimum/{k}": v for k, v in opt.to_arrays().items()})
    arrays["J"] = J.cpu().numpy()
    summary["optimum_recon_corr"] = float(opt["corr"][0, 0])
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


def fig2d(config: Fig2dConfig, ctx: RunContext) -> Result:
    data = potts_data(config, ctx)
    a = np.repeat(np.asarray(config.a_values, float), config.seeds)
    seeds = [ctx.seed("init", k) % 2**62 for k in range(config.seeds)] * len(config.a_values)  # same inits at every a

    def compute(u: Unit) -> dict[str, np.ndarray]:
        with ctx.progress(config.epochs, f"{len(a)} models of eq. (2)") as bar:
            fit = train_stacked("perturbed", data, seeds=seeds, a=a.tolist(), optim=config.optim(),
                                progress=lambda e, T: bar.update(e), checkpoint=u.save, resume=u.resume)
        return {**fit.trajectory.to_arrays("traj_"), "map": fit.maps.cpu().numpy()}

    res = run_units(ctx, ["all"], compute, "a sweep")["all"]
    traj = Trajectory.from_arrays(res, "traj_", time_name="epoch", source="eq2")
    test = traj["test_loss"][-1].reshape(len(config.a_values), config.seeds)
    corr = traj["corr"][-1].reshape(len(config.a_values), config.seeds)
    summary: dict[str, float] = {"optimal_loss": data.optimal_loss}
    for k, av in enumerate(config.a_values):
        summary[f"test_a{av:g}"] = float(test[k].mean())
        summary[f"test_a{av:g}_std"] = float(test[k].std())
        summary[f"corr_a{av:g}"] = float(corr[k].mean())
    means = test.mean(1)
    summary["spearman_a_test"] = float(spearmanr(config.a_values, means).statistic)
    summary["margin_amax_a0"] = float(means[-1] - means[0]) if config.a_values[0] == 0 else float("nan")
    summary["best_a"] = float(config.a_values[int(means.argmin())])
    df = traj.to_frame().rename(columns={"i": "model"})  # the stacked model: a-value × replica
    comp = df["model"].astype(int)
    df["a"], df["replica"] = a[comp], comp % config.seeds
    return Result(df, {**res, "a": a}, summary)


FIG2 = Experiment(STUDY, "fig2", Fig2Config, fig2, ref="Fig. 2a-c", figure=figures.fig2, headline=True,
                  title="Factored vs vanilla attention on Potts data: test loss, maps, reconstruction error",
                  cost=costs.fig2, summary=Fig2Summary,
                  outputs=declare(arrays=fig2_arrays, index={TRAJ: ("replica",)},  # a stack
                                  tiny={**TINY_DATA, "epochs": 3, "vanilla_epochs": 2, "d": 8, "n_eval": 20}))
FIG2D = Experiment(
    STUDY, "fig2d", Fig2dConfig, fig2d, ref="Fig. 2d", figure=figures.fig2d, memory=memory.fig2d, cost=costs.fig2d,
    title="Test loss vs the position/embedding mixing a of eq. (2)", summary=Fig2dSummary,
    outputs=declare(
        arrays={  # one stacked model per (a, seed), a-major; evaluated at every epoch
            "a": ("len(a_values) * seeds",),
            "traj_time": ("epochs + 1",),
            "map": ("len(a_values) * seeds", "L", "L"),
            "traj_corr traj_gap traj_recon_err traj_test_loss traj_train_loss": ("epochs + 1", "len(a_values) * seeds"),
        },
        tiny={**TINY_DATA, "a_values": [0.0, 1.0], "seeds": 2, "epochs": 2}))
