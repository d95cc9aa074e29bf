"""The theory of paper 4 (Sec. 3, App. B-C), pure tensor code for one model.

* :mod:`.construction` — the explicit clustering head of Fig. 1 and Prop. 1 (Eqs. (1)-(2));
* :mod:`.gradients` — the closed-form gradients of Lemma 1/2 and Prop. 3's stationarity (Eqs. (1)-(4), (7), (15));
* :mod:`.bound` — the total-variation error and the gradient bound of Prop. 2/4, printed and corrected (Eq. (33)).
"""
