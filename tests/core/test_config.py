import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core.config import Config, ConfigError, load_yaml, parse_sets, parse_value, replace, resolve


class C(Config):
    H: int = Field(2, ge=1)
    nu: float = Field(1.0, gt=0)
    act: str = "softmax"
    scales = {"quick": {"H": 3}, "paper": {}}


def test_parse_value_types():
    assert parse_value("3") == 3 and isinstance(parse_value("3"), int)
    assert parse_value("1e4") == 1e4
    assert parse_value("true") is True and parse_value("False") is False
    assert parse_value("[1, 2]") == [1, 2]
    assert parse_value("softmax") == "softmax"
    assert parse_value("null") is None


def test_resolve_order_and_scale():
    assert resolve(C, "quick").H == 3
    assert resolve(C, "paper").H == 2
    c = resolve(C, "quick", {"H": 5}, seed=7)
    assert (c.H, c.seed) == (5, 7)


def test_int_field_accepts_integral_float():
    assert resolve(C, "quick", parse_sets(["H=1e1"])).H == 10


@pytest.mark.parametrize(
    "sets, key",
    [
        (["H=0"], "H"), (["H=abc"], "H"), (["nu=-1"], "nu"), (["foo=1"], "foo"), (["H=1.5"], "H"),
        (["device=gpu"], "device"),
    ],
)
def test_bad_values_name_the_key(sets, key):
    with pytest.raises(ConfigError) as e:
        resolve(C, "quick", parse_sets(sets))
    msg = str(e.value)
    assert f"'{key}'" in msg and "\n" not in msg


def test_unknown_key_lists_allowed():
    with pytest.raises(ConfigError, match="allowed keys: seed, device, H, nu, act"):
        resolve(C, "quick", {"bogus": 1})


def test_bad_scale_and_malformed_set():
    with pytest.raises(ConfigError, match="allowed: quick, paper"):
        resolve(C, "huge")
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_sets(["H"])


def test_configs_are_frozen_and_hash_stable():
    c = resolve(C, "quick")
    with pytest.raises(ValidationError):
        c.H = 4  # type: ignore[misc]
    assert c.hash("x.y") == resolve(C, "quick").hash("x.y")
    assert c.hash("x.y") != replace(c, H=4).hash("x.y")
    assert c.hash("x.y") != c.hash("x.z")


def test_malformed_yaml_value_is_one_line():
    with pytest.raises(ConfigError) as e:
        parse_sets(["steps=["])
    assert "\n" not in str(e.value) and "not valid YAML" in str(e.value)


def test_yaml_file(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("H: 7\nnu: 0.5\n")
    assert resolve(C, "quick", load_yaml(p)).H == 7
    p.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_yaml(p)
    with pytest.raises(ConfigError, match="does not exist"):
        load_yaml(tmp_path / "missing.yaml")


_keys = st.sampled_from(["steps", "dim", "drift", "seed", "device", "bogus", "", "steps "])
_values = st.one_of(
    st.integers(-5, 10**6).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12), st.sampled_from(["[1,2]", "{a: 1}", "[", "true", "cuda", "cpu", "1e3"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(st.tuples(_keys, _values), min_size=1, max_size=3), sep=st.sampled_from(["=", ":", ""]))
def test_cli_random_sets_either_run_or_fail_cleanly(tmp_path, pairs, sep):
    """Random --set strings: exit 0, or exit 2 with one line naming the problem and nothing written."""
    store = tmp_path / uuid.uuid4().hex
    args = ["run", "knobs.walk", "--store", str(store), "--json", "--set", "steps=2"]
    for k, v in pairs:
        args += ["--set", f"{k}{sep}{v}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
        assert not store.exists(), "a rejected config must not write to the run store"


def test_with_defaults_keeps_constraints():
    D = C.with_defaults("D", scales={"quick": {}, "paper": {"H": 9}}, H=7, act="bsoftmax")
    assert (D().H, D().act, resolve(D, "paper").H) == (7, "bsoftmax", 9)
    assert C().H == 2 and C.scales["quick"] == {"H": 3}
    with pytest.raises(ConfigError, match="'H'"):
        resolve(D, "quick", {"H": 0})
    with pytest.raises(TypeError):
        C.with_defaults("E", nope=1)


def test_a_field_added_later_keeps_the_stored_run_ids_while_at_its_default():
    """``added(default)``: a parameter introduced after runs were stored leaves their run ids unchanged (stored runs,
    committed records and sweeps stay valid) until a run sets another value."""
    from typing import Literal

    from attnlab.core.config import Config, added

    class Before(Config):
        n: int = 3

    class After(Config):
        n: int = 3
        stream: Literal["v1", "v2"] = added("v1", description="token stream version")
        widths: tuple[int, ...] = added((1, 2))

    assert After().hash("x.y") == Before().hash("x.y")
    assert After(stream="v2").hash("x.y") != Before().hash("x.y")
    assert After(widths=(1, 3)).hash("x.y") != Before().hash("x.y")
    assert After(n=4).hash("x.y") == Before(n=4).hash("x.y")


def test_every_parameter_says_what_it_is_and_what_it_accepts():
    """`attnlab list` shows each parameter's description and allowed values: none of them is empty (issue 27)."""
    from attnlab.core.config import _allowed
    from attnlab.core.registry import experiments

    missing = [f"{e.key}.{name}: {what}" for e in experiments() for name, f in e.config.model_fields.items()
               for what, ok in (("description", f.description), ("allowed values", _allowed(f))) if not ok]
    assert not missing, missing
