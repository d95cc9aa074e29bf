"""What self-attention learns from masked language modelling on generalised Potts sequences (paper 2)."""
