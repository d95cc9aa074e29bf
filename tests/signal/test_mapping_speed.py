"""What makes ``attnlab map`` fast without changing its numbers: the block's projections by oneDNN (the same linear map
to float32 rounding), the theory and the reading of the weights on one thread (restored after, the same numbers at any
thread count)."""

import pytest
import torch
from torch.nn import functional as F

from attnlab.signal.mapping import measure, place, read, report


def test_onednn_projection_is_the_linear_map():
    gen = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(4, 16, 64, generator=gen), torch.randn(96, 64, generator=gen), torch.randn(96, generator=gen)
    with torch.no_grad():
        for bias in (b, None):
            want = F.linear(x, w, bias)
            got = measure.linear(x, w, bias)
            assert got.shape == (4, 16, 96) and torch.allclose(got, want, rtol=1e-5, atol=1e-5)
            if measure.onednn() is not None:  # both oneDNN routes, where this torch has them
                for f in (measure._pointwise, measure._converted):
                    try:
                        alt = f(x, w, bias)
                    except Exception:  # e.g. a torch without inductor's op: onednn() then picks the other
                        continue
                    assert torch.allclose(alt, want, rtol=1e-5, atol=1e-5)
    assert torch.equal(measure.linear(x.double(), w.double()), F.linear(x.double(), w.double()))


def test_one_thread_is_restored_even_on_error():
    n = torch.get_num_threads()
    with pytest.raises(RuntimeError), read.one_thread():
        assert torch.get_num_threads() == 1
        raise RuntimeError
    assert torch.get_num_threads() == n
    x, w = torch.randn(3, 8), torch.randn(5, 8)
    with torch.no_grad(), read.one_thread():
        assert torch.allclose(measure.linear(x, w, threads=2), F.linear(x, w), rtol=1e-5, atol=1e-5)
        assert torch.get_num_threads() == 1


def test_the_map_is_the_same_at_one_and_two_threads():
    spec = read.from_family("bert", 2, 256, 4)  # large enough that torch splits its element-wise work
    n = torch.get_num_threads()
    docs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            docs.append(place.map_model(spec, T=64, batch=8))
    finally:
        torch.set_num_threads(n)
    for key in ("layers", "predicted", "measured", "map"):
        assert report.to_json(docs[0][key]) == report.to_json(docs[1][key]), key  # to the last bit
