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
    from attnlab.core.experiment import get
    from attnlab.core.rng import Streams, stream_seed
    from attnlab.core.runs import RunContext

    config = resolve(get("knobs.walk").config, "quick", {}, seed=7)
    ctx = RunContext(tmp_path, config, torch.device("cpu"), Streams(7))
    assert ctx.seed("data") == stream_seed(7, "data") and ctx.seed("data", 3) == (stream_seed(7, "data") + 3) % 2**63
    a, b = ctx.generator("data"), ctx.generator("data", "cpu")
    assert torch.equal(torch.rand(4, generator=a), torch.rand(4, generator=b))
    assert torch.equal(torch.rand(4, generator=ctx.generator("data")), torch.rand(4, generator=ctx.rng("data")))
