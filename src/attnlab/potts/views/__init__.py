"""The potts study's sandbox views (paper 2): ``training`` (Fig. 2), ``mixing`` (Fig. 2d), ``samples`` (Fig. 3 right),
``replica`` (Fig. 3 left), ``chain`` (the Gibbs sampler), with ``common`` helpers; ``plugin`` registers them."""
