"""The experiments of paper 2, one module per figure family: each declares its experiments whole (config, run,
figure, memory and time models, outputs, paper reference) as ``Experiment`` constants that ``attnlab.potts.study``
lists."""
