"""The signal study's sandbox views (paper 1): ``depth`` (signal propagation layer by layer), ``mlm`` (training step
by step), with the settings of ``settings``; ``plugin`` registers them."""
