import torch

from attnlab.core.rng import Streams, stream_seed


def test_streams_are_named_deterministic_and_independent():
    a, b = Streams(1), Streams(1)
    x = torch.randn(5, generator=a.torch("data"))
    a.torch("init")  # asking for another stream first must not change "data"
    assert torch.equal(x, torch.randn(5, generator=b.torch("data")))
    assert not torch.equal(torch.randn(5, generator=Streams(1).torch("init")), x)
    assert stream_seed(1, "data") != stream_seed(2, "data")
    assert 0 <= stream_seed(123, "mc") < 2**63


def test_state_roundtrip_continues_sequence():
    s = Streams(3)
    torch.randn(7, generator=s.torch("data"))
    s.numpy("mc").normal(size=3)
    state = s.state_dict()
    want_t, want_n = torch.randn(4, generator=s.torch("data")), s.numpy("mc").normal(size=2)
    t = Streams(3)
    t.load_state_dict(state)
    assert torch.equal(torch.randn(4, generator=t.torch("data")), want_t)
    assert (t.numpy("mc").normal(size=2) == want_n).all()


def test_run_context_seeds_and_generators_follow_the_named_streams(tmp_path):
    import torch

    from attnlab.core.config import resolve
    from attnlab.core.registry import get
    from attnlab.core.rng import Streams, stream_seed
    from attnlab.core.runs import RunContext

    config = resolve(get("knobs.walk").config, "quick", {}, seed=7)
    ctx = RunContext(tmp_path, config, torch.device("cpu"), Streams(7))
    assert ctx.seed("data") == stream_seed(7, "data") and ctx.seed("data", 3) == (stream_seed(7, "data") + 3) % 2**63
    a, b = ctx.generator("data"), ctx.generator("data", "cpu")
    assert torch.equal(torch.rand(4, generator=a), torch.rand(4, generator=b))
    assert torch.equal(torch.rand(4, generator=ctx.generator("data")), torch.rand(4, generator=ctx.rng("data")))


def test_every_way_to_draw_gives_the_numbers_it_gave_before(tmp_path):
    """Pinned first draws (CPU, seed 7) of each API a run gets randomness from: stored results depend on them."""
    from attnlab.core.config import Config
    from attnlab.core.rng import generator
    from attnlab.core.runs import RunContext

    ctx = RunContext(tmp_path, Config(seed=7), torch.device("cpu"), Streams(7))
    assert (stream_seed(7, "data"), stream_seed(0, "init")) == (130152873812191995, 7290039654019473914)
    assert torch.rand(3, generator=ctx.rng("data")).tolist() == [0.5549949407577515, 0.00825124979019165,
                                                                 0.5213393568992615]
    init = [0.6255181431770325, 0.030422627925872803, 0.693578839302063]
    assert torch.rand(3, generator=ctx.generator("init")).tolist() == init
    assert torch.rand(3, generator=ctx.streams.generator("init")).tolist() == init
    assert ctx.seed("teacher", 5) == ctx.streams.seed_for("teacher", 5) == 6584496411609867660
    mc2 = [0.03762805461883545, 0.016207516193389893, 0.02847367525100708]
    assert torch.rand(3, generator=torch.Generator().manual_seed(ctx.seed("mc", 2))).tolist() == mc2
    assert torch.rand(3, generator=generator(ctx.seed("mc", 2))).tolist() == mc2  # the raw calls' replacement
    assert torch.rand(3, generator=ctx.generator("mc", offset=2, device="cpu")).tolist() == mc2
    assert ctx.streams.numpy("mc").random(3).tolist() == [0.8038114817138653, 0.024049824081608717,
                                                          0.6045634369154107]
