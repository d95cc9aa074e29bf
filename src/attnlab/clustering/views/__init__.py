"""The clustering study's sandbox view (paper 4 Sec. 4.1): ``plugin`` opens a training run's snapshots,
``figures`` draws the panels of ``clustering.render.panels`` with Plotly."""
