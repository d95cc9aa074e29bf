"""Paper 4's training dynamics and loss spikes (§4.3, §4.4; Figs 9-13, 17, 18): the experiments, their figures
and claims."""
