"""Claims of paper 1 as checks (``attnlab check signal``), in the modules that :mod:`attnlab.signal.study` names, in
this order:

* :mod:`.exact` — closed forms and moments computed directly (Eqs. (10)-(11), (13)-(14), (16)-(19), (B.22), App. B.1);
* :mod:`.attention` — one attention layer: the REM (Fig. B.1), universality of β_c, Fig. 3 (Secs. 3.1-3.2);
* :mod:`.depth` — signal propagation over depth (Eq. (19), Figs. 1c-e), fixed points (Fig. 5), no skips (App. C.3);
* :mod:`.spectrum` — the attention spectrum at initialisation (App. C.1, Fig. C.1);
* :mod:`.training` — MLM training (Figs. 4, C.2, 1f) and the HuggingFace interop;
* :mod:`.mapping` — the map of real architectures (``attnlab map``; Eq. (19) per layer, Fig. 1c);
* :mod:`.worlds` — for each asserted claim, a world where it is false (or why none is built).

Claims that read a figure reuse that figure's run in the store (``ctx.summary``). Tolerances are this project's, sized
for the quick scale (``docs/studies/signal.md`` lists each with the measured value); the deep-training claims of
Fig. 1f hold at ``paper`` scale only.
"""
