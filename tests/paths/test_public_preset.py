"""The public code's Markov run (tiberilor/attention-paths-interplay, 4-path script and LOOP_RUN flags) in attnlab:
``preset="public"``, its data streams, per-head seeds and block strengths, and tokens / heads read from files.

The public code's draws, written down here in words (not its code): data from a CPU generator seeded 27 (train)
or 59 (test); P/2 sequences of class +1 then P/2 of class −1; per sequence one uniform coin for the first state
(≥ ½: +) and one per step (below the stay probability: stay); then one (P, N0, T) standard normal array of noise.
A head seeded s: features block + f·N(0,1)/N0 (drawn if f > 0), positions block + p·N(0,1) (always drawn), cross
blocks + c·N(0,1)/√N0 from one D×D draw (if c > 0), all times β.
"""

import numpy as np
import pytest
import torch

from attnlab.core.config import ConfigError, parse_sets, resolve
from attnlab.paths.configs import HeadSpec
from attnlab.paths.data import markov as data
from attnlab.paths.data import public
from attnlab.paths.experiments.markov import Fig2cConfig, Fig5cConfig, GenericConfig
from attnlab.paths.theory import kernels, problems
from attnlab.paths.theory import saddle as theory

F64 = torch.float64
G = torch.Generator


def test_default_stays_the_papers_and_run_ids_are_unchanged():
    """Ids computed by the code before these options existed."""
    assert resolve(Fig2cConfig, "paper").hash("paths.fig2c") == "096e08659e8a4eba"
    assert resolve(Fig2cConfig, "quick").hash("paths.fig2c") == "f6eae45c061c554c"
    assert resolve(GenericConfig, "quick").hash("paths.generic") == "51f4fd85553aa424"
    listed = resolve(Fig2cConfig, "quick", parse_sets(
        ["heads=[[good, {kind: random, perturbation: 0.5}], [uniform, random]]"]))
    assert listed.hash("paths.fig2c") == "0712542c4d98cd95"
    c = resolve(Fig2cConfig, "paper")
    assert (c.preset, c.streams, c.readout, c.heads, c.tokens_file, c.heads_file) == \
        ("paper", "attnlab", 1, None, None, None)
    assert c.widths == (10, 20, 50, 100, 200, 500, 1000, 10_000)


def test_public_preset_resolves_to_the_public_run():
    c = resolve(Fig2cConfig, "paper", parse_sets(["preset=public"]))
    assert c.readout == -1 and c.widths == (10, 30, 50, 100, 300, 500, 1000) and c.streams == "public"
    assert [[(h.kind, h.seed) for h in lay] for lay in c.heads] == \
        [[("same_token", 127), ("random", 147)], [("uniform", 217), ("random", 247)]]
    r = c.heads[0][1]
    assert (r.features_perturbation, r.positions_perturbation, r.cross_perturbation) == (1.0, 1.0, 1.0)
    assert (c.P, c.T, c.N0, c.beta, c.tau, c.sigma_par, c.sigma_perp, c.init) == \
        (100, 30, 200, 10.0, 0.01, 1.0, 1.0, "gp")
    assert c.hash("paths.fig2c") != resolve(Fig2cConfig, "paper").hash("paths.fig2c")
    # an explicit key wins over the preset; a layout without a public run keeps attnlab's heads
    assert resolve(Fig2cConfig, "paper", parse_sets(["preset=public", "readout=1"])).readout == 1
    assert resolve(Fig5cConfig, "quick", parse_sets(["preset=public"])).heads is None
    with pytest.raises(ConfigError, match="key 'P' = 99: streams 'public'"):
        resolve(Fig2cConfig, "quick", parse_sets(["preset=public", "P=99"]))


def _public_law(task, P, seed):
    """The public draw order, one coin at a time (see the module doc)."""
    g = G().manual_seed(seed)
    stay = [[1 - p for p in pair] for pair in task.switching()]
    states = []
    for k in range(P):
        cls = 0 if k < P // 2 else 1
        c = 1.0 if float(torch.rand(1, generator=g, dtype=F64)) >= 0.5 else -1.0
        row = [c]
        for _ in range(task.T - 1):
            coin = float(torch.rand(1, generator=g, dtype=F64))
            c = c if coin < stay[cls][0 if c > 0 else 1] else -c
            row.append(c)
        states.append(row)
    noise = torch.randn(P, task.N0, task.T, generator=g, dtype=F64)
    return torch.tensor(states, dtype=F64), noise


def test_public_streams_follow_the_public_draw_order():
    task = data.MarkovTask(T=6, N0=8, sigma_diff=0.5, sigma_sum=2.0, sigma_perp=1.5, switch_plus=(0.2, 0.4))
    d = public.sample_public(task, 10, 27)
    states, noise = _public_law(task, 10, 27)
    assert torch.equal(d.states, states) and torch.equal(d.y, torch.tensor([1.0] * 5 + [-1.0] * 5, dtype=F64))
    vp, vm = task.state_vectors()
    ed, es = (vp - vm) / (vp - vm).norm(), (vp + vm) / (vp + vm).norm()
    n = noise.transpose(1, 2)
    pd, ps = (n @ ed)[..., None] * ed, (n @ es)[..., None] * es
    feats = torch.where(states[..., None] > 0, vp, vm) + 0.5 * pd + 2.0 * ps + 1.5 * (n - pd - ps)
    assert float((d.X[:, 1:, :8] - feats).abs().max()) < 1e-12
    assert torch.equal(d.X[:, 0, :8], torch.zeros(10, 8)) and torch.equal(d.X[0, :, 8:], torch.eye(7, dtype=F64))
    assert not torch.equal(public.sample_public(task, 10, 59).X, d.X)


def test_a_seeded_head_depends_on_its_own_seed_only():
    task = data.MarkovTask(T=5, N0=6)
    specs = [[HeadSpec(kind="same_token"), HeadSpec(kind="random", seed=5)],
             [HeadSpec(kind="uniform"), HeadSpec(kind="random")]]
    a = data.build_heads(task, specs, G().manual_seed(0))
    b = data.build_heads(task, specs, G().manual_seed(1))
    assert torch.equal(a[0][1], b[0][1]) and not torch.equal(a[1][1], b[1][1])
    other = [[specs[0][0], HeadSpec(kind="random", seed=6)], specs[1]]
    assert not torch.equal(data.build_heads(task, other, G().manual_seed(0))[0][1], a[0][1])
    # the public code's order: features (N0×N0)/N0, positions (T+1)², cross D×D/√N0 off the diagonal blocks
    g, N0, D, beta = G().manual_seed(5), 6, task.D, 10.0
    W = torch.zeros(D, D, dtype=F64)
    W[:N0, :N0] += torch.randn(N0, N0, generator=g, dtype=F64) / N0
    W[N0:, N0:] += torch.randn(D - N0, D - N0, generator=g, dtype=F64)
    R = torch.randn(D, D, generator=g, dtype=F64) / N0**0.5
    R[:N0, :N0] = R[N0:, N0:] = 0
    assert float((a[0][1] - beta * (W + R)).abs().max()) < 1e-12
    # a seeded good head without perturbation is the good head
    assert torch.equal(data.build_heads(task, [[HeadSpec(kind="same_token", seed=3)]], G())[0][0],
                       data.token_head(task, "same_token", 10.0, -1))


def test_block_strengths_and_unchanged_defaults():
    task = data.MarkovTask(T=5, N0=6)
    named = data.markov_heads(task, "all", G().manual_seed(3))
    plain = [[HeadSpec(kind="same_token"), HeadSpec(kind="random")], [HeadSpec(kind="uniform"),
                                                                       HeadSpec(kind="random")]]
    assert all(torch.equal(x, y) for x, y in zip(named, data.build_heads(task, plain, G().manual_seed(3)),
                                                 strict=True))
    assert set(HeadSpec(kind="random").model_dump()) == {"kind", "shift", "beta", "perturbation"}
    # separate strengths scale the same draw per block; features only leaves positions and cross untouched
    N0 = 6
    feat = data.build_heads(task, [[HeadSpec(kind="uniform", features_perturbation=2.0)]], G().manual_seed(4))[0][0]
    g = torch.randn(task.D, task.D, generator=G().manual_seed(4), dtype=F64)
    assert torch.allclose(feat[:N0, :N0], 10.0 * 2.0 * g[:N0, :N0] / N0)
    assert feat[N0:, :].abs().max() == 0 and feat[:N0, N0:].abs().max() == 0
    same = data.build_heads(task, [[HeadSpec(kind="random", perturbation=0.7, cross_perturbation=0.7)]],
                            G().manual_seed(4))[0][0]
    assert torch.allclose(same, data.random_head(task, G().manual_seed(4), 10.0, 0.7), rtol=1e-14, atol=0)


def _write(tmp_path, task, P=20, P_test=30):
    tr, te = data.sample(task, P, G().manual_seed(0)), data.sample(task, P_test, G().manual_seed(1))
    hs = data.markov_heads(task, "all", G().manual_seed(2))
    tok, hd = tmp_path / "tokens.npz", tmp_path / "heads.npz"
    np.savez(tok, X_train=tr.X.numpy(), y_train=tr.y.numpy(), X_test=te.X.numpy(), y_test=te.y.numpy())
    np.savez(hd, heads1=hs[0].numpy(), heads2=hs[1].numpy())
    return tok, hd, tr, te, hs


def test_runs_on_tokens_and_heads_from_files(tmp_path, store):
    from attnlab.core.registry import get
    from attnlab.core.runs import load_result

    task = data.MarkovTask(T=5, N0=8)
    tok, hd, tr, te, hs = _write(tmp_path, task)
    exp = get("paths.fig2d")
    cfg = resolve(exp.config, "quick", parse_sets([f"tokens_file={tok}", f"heads_file={hd}", "readout=-1"]))
    assert (cfg.P, cfg.P_test, cfg.T, cfg.N0, cfg.L) == (20, 30, 5, 8, 2)
    res = load_result(store.run(exp, cfg).run_dir)[1]
    pb = problems.markov_problem(task, "all", 20, 30, data=G(), test=G(), heads=G(), readout=-1, train_set=tr,
                                 test_set=te, head_stacks=hs)
    kern = kernels.PathKernels(pb.Xi, 1.0)
    U = theory.sweep(pb, [cfg.alignment_width], cfg.tau, kern=kern)[0].U.numpy()
    assert np.abs(res.arrays["U"] - U).max() < 1e-6 * np.abs(U).max()


def test_a_rewritten_file_makes_a_new_run_and_a_stale_config_is_refused(tmp_path):
    """The files' contents are in the run id (files_sha256): the same name with other tokens is another run, and a
    stored config whose file changed since no longer validates (it would describe other data)."""
    from attnlab.core.config import ConfigError, resolve_from
    from attnlab.core.registry import get

    task = data.MarkovTask(T=5, N0=8)
    tok, hd, *_ = _write(tmp_path, task)
    exp = get("paths.fig2d")
    sets = parse_sets([f"tokens_file={tok}", f"heads_file={hd}"])
    before = resolve(exp.config, "quick", sets)
    assert before.files_sha256 and before.hash(exp.key) == resolve(exp.config, "quick", sets).hash(exp.key)
    with np.load(tok) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["X_train"] = arrays["X_train"] * 1.01
    np.savez(tok, **arrays)
    after = resolve(exp.config, "quick", sets)
    assert after.files_sha256 != before.files_sha256 and after.hash(exp.key) != before.hash(exp.key)
    with pytest.raises((ConfigError, ValueError), match="changed since this config was made"):
        resolve_from(exp.config, before.model_dump(mode="json"))


@pytest.mark.parametrize(("sets", "message"), [
    (["tokens_file=/no/such.npz"], "key 'tokens_file' = '/no/such.npz': no such file"),
    (["tokens_file={tmp}/tokens.txt"], "expected a .npz file"),
    (["tokens_file={tmp}/nolabels.npz"], "needs arrays X_train and y_train"),
    (["tokens_file={tmp}/badlabels.npz"], "y_train must be 20 labels, each +1 or -1"),
    (["tokens_file={tmp}/tokens.npz", "P=50"], "key 'P' = 50: the tokens of tokens_file have P = 20; set P=20"),
    (["heads_file={tmp}/heads.npz"], "heads of width D = 14, but tokens have D = N0 + T + 1 = 231"),
    (["heads_file={tmp}/tokens.npz"], "needs arrays heads1, heads2"),
    (["heads_file={tmp}/broken.npy"], "not a readable NumPy file"),
])
def test_file_problems_are_one_line(tmp_path, sets, message):
    task = data.MarkovTask(T=5, N0=8)
    tok, *_ = _write(tmp_path, task)
    (tmp_path / "tokens.txt").write_text("x")
    (tmp_path / "broken.npy").write_bytes(b"not numpy")
    z = dict(np.load(tok))
    np.savez(tmp_path / "nolabels.npz", X_train=z["X_train"])
    np.savez(tmp_path / "badlabels.npz", X_train=z["X_train"], y_train=2 * z["y_train"])
    with pytest.raises(ConfigError) as err:
        resolve(Fig2cConfig, "quick", parse_sets([s.format(tmp=tmp_path) for s in sets]))
    assert message in str(err.value) and "\n" not in str(err.value)
