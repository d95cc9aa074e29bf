"""The built-in sandbox plug-ins: the clustering study (paper 4) and the specialization study (paper 0)."""
