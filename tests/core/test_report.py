"""The HTML report reads like a document: contents first, the claims, one full run per experiment (the others in
one table), each distinct figure once and enlargeable, long tables folded."""

import re

from attnlab.core import report
from attnlab.core.config import resolve
from attnlab.core.experiment import get


def _walks(store, seeds, steps=4):
    exp = get("toy.walk")
    return [store.run(exp, resolve(exp.config, "quick", {"steps": steps}, seed=s)) for s in seeds]


def test_the_report_has_contents_one_full_run_per_experiment_and_the_others_in_a_table(store):
    records = _walks(store, range(3))
    html = report.build(store)
    toc = html.split("<nav class='toc'>", 1)[1].split("</nav>", 1)[0]
    assert "Runs — toy" in toc and "toy.walk" in toc
    for anchor in re.findall(r"href='#([^']+)'", toc):
        assert f"id='{anchor}'" in html, anchor  # every entry of the contents leads somewhere
    assert html.count("<section>") == 1  # the newest run in full …
    assert "2 other runs of this experiment" in html  # … and the two others in one table
    for r in records:
        assert r.run_id in html
    assert html.count("<img ") == 1 and "classList.toggle('zoom')" in html


def test_the_same_figure_is_inlined_once_and_explicit_targets_are_each_shown_in_full(store):
    a, b = _walks(store, [5, 6])
    html = report.build(store, [a.run_dir, a.run_dir, b.run_dir])
    assert html.count("<section>") == 3 and html.count("<img ") == 2  # the repeated run's figure links back
    assert "the same figure as above" in html


def test_a_long_summary_is_folded(tmp_path):
    folded = report._kv_table({f"k{i}": i for i in range(report.FOLD_ROWS + 1)}, "summary")
    shown = report._kv_table({"a": 1.0}, "summary")
    assert folded.startswith("<details>") and "(13 values)" in folded and shown.startswith("<h4>summary</h4>")
