"""The Gaussian model of paper 2's replica analysis (Fig. 3-left): data and ridge learner (``data``), the
replica-symmetric theory (``theory``), its experiments, configs, figures and claims."""
