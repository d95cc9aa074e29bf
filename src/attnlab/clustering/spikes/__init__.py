"""Paper 4's training dynamics and loss spikes (Sec. 4.3, Sec. 4.4; Figs. 9-13, 17, 18): the experiments, their figures
and claims."""
