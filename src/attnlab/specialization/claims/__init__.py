"""Claims of paper 0 as checks (``attnlab check specialization``), in the modules that
:mod:`attnlab.specialization.study` names, in this order:

* :mod:`.exact` — closed forms and constructions computed directly: Lemma A.4, the Hessian constants of (13),
  Props. IV.2, IV.3, the Bayes risk's monotonicity, redundant-head pruning;
* :mod:`.dynamics` — read from runs: SGD = theory (Figs. 1, 9), the two phases (Props. III.3, III.4), sequential
  and hierarchical learning (Figs. 3, 4), fixed MC samples (Fig. 8);
* :mod:`.trained` — read from runs: final errors (Fig. 5), attention maps (Fig. 6), pruning (Fig. 7), Fig. 11;
* :mod:`.identities` — exact identities of the model and its reduction (Prop. III.1, Lemmas A.1, A.3, Eq. (4)).
* :mod:`.worlds` — for each asserted claim, a world where it is false (or why none is built; issue 26).
"""
