"""Training of paper 0's attention by online SGD, Eqs. (5)-(6).

* :mod:`.sgd` — :func:`simulate_sgd`: many seeds at once, the batch streamed in chunks, resumable;
* :mod:`.gram` — the loss head on the Gram matrices (Eq. (6)) that the step and the kernels end in;
* :mod:`.fused` — the step's Triton kernels (CUDA only): the tokens never touch GPU memory;
* :mod:`.budget` — the memory the SGD and the theory hold, and the SGD's chunk from the device's free memory.
"""

from attnlab.specialization.train.gram import gram_head
from attnlab.specialization.train.sgd import (
    SGDResult,
    batch_loss_and_grad,
    record_steps,
    seed_generator,
    simulate_sgd,
)

__all__ = ["SGDResult", "batch_loss_and_grad", "gram_head", "record_steps", "seed_generator", "simulate_sgd"]
