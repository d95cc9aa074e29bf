"""``attnlab map``: a real model on the trainability diagram of paper 1 (Fig. 1c), in the modules

* :mod:`.read` — any encoder (``transformers``, ``torch``, the study's own) → one weight dict per layer (a ``Spec``);
* :mod:`.measure` — the measured side: ρ_ℓ and S_ℓ/log T on inputs, the post-LN block of Eq. (5);
* :mod:`.place` — the prediction (Eq. (19) layer by layer), the place on the diagram, the fix (``map_model``);
* :mod:`.report` — the figure, the JSON document and the terminal summary; :mod:`.page` — the interactive page;
* :mod:`.hf` — HuggingFace interop: a BERT-style encoder's β and phase (App. B.1), ``reinit`` to a chosen β, α_SA.
"""
