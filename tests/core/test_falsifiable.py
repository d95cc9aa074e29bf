"""Every asserted claim can fail: measured in the world its definition names (``falsify=World(...)``), where the
paper's statement is false, it must say ``fail``; an asserted claim without a world says why in one sentence
(``docs/claims.md`` lists those). Ids are the claims' (``pytest -k paths.`` runs one study's)."""

import pytest
import torch

from attnlab import STUDIES
from attnlab.core.runs import RunStore
from attnlab.core.worlds import World, asserted, measure_in, with_world

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One store for the module: worlds with the same overrides reuse each other's runs."""
    return RunStore(tmp_path_factory.mktemp("worlds"))


@pytest.mark.parametrize("claim", with_world(), ids=lambda c: c.id)
def test_the_claim_fails_in_its_world(claim, store):
    value, verdict, detail = measure_in(claim, store)
    assert verdict == "fail", (f"{claim.id} passes in a world where it is false ({claim.falsify.why}): measured "
                               f"{value}, expected {claim.expected_text()}; {detail}")


@pytest.mark.parametrize("study", STUDIES)
def test_every_asserted_claim_names_a_world_or_says_why(study):
    missing = [c.id for c in asserted(study)
               if not isinstance(c.falsify, World) and not (isinstance(c.falsify, str) and len(c.falsify) >= 30)]
    assert not missing, f"{len(missing)} asserted claims of {study} name no world where they fail: {missing}"
