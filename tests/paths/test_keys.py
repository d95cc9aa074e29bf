"""The summary keys' spellings that stored runs, claims records and the docs already hold (paths/keys.py)."""

from attnlab.paths.keys import net_key, path_key, pruned_key, set_key, width_key


def test_key_spellings():
    assert width_key("acc_theory", 10) == "acc_theory_N10"
    assert width_key("acc_theory", 1e4) == "acc_theory_N10000"
    assert width_key("rhat", 50.0) == "rhat_N50"
    assert width_key("acc_sample", "{sample_widths}") == "acc_sample_N{sample_widths}"
    assert set_key("acc_gp", "good_denoising") == "acc_gp_good_denoising"
    assert path_key("contrast", 2) == "contrast_path2"
    assert net_key("L2_H4-4", "tau_star") == "L2_H4-4/tau_star"
    assert net_key("L2_H4-4", "acc_fw", "id", N=10) == "L2_H4-4/acc_fw_id_N10"
    assert net_key("L2_H4-4", "U_dev_from_gp", N=1000.0) == "L2_H4-4/U_dev_from_gp_N1000"
    assert pruned_key("L2_H8-8", 4, "id") == "L2_H8-8/acc_pruned4_id"
