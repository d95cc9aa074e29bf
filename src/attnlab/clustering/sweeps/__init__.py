"""Paper 4's multi-seed statistics (App. A.1-A.4; Figs. 7, 14, 16, 19): the experiments, their figures and claims."""
