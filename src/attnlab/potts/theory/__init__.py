"""The theory of paper 2: the exact optimum of masked language modelling on Potts data, whose conditionals are the
model's own (Eqs. (4)-(5): ``optimum``), and the replica-symmetric theory of the linear factored layer on the
Gaussian model (Eqs. (7)-(9), (36)-(42): ``replica``)."""
