"""One benchmark script per study, run by `attnlab bench [STUDY]` or `python -m benchmarks.<study> [PART ...]`.

Not `python benchmarks/<study>.py`: a script run by path puts this folder first on sys.path, where signal.py would
shadow the standard library's `signal` (which torch imports).
"""
