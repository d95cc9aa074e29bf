"""The specialization study's sandbox view (paper 0): head trajectories and the loss, theory against SGD
(``plugin``)."""
