"""Benchmarks and probes that reproduce and extend the paper's measurements.

This package lives beside ``skformer/`` in the source repository, as scikit-learn keeps
``benchmarks/`` beside ``sklearn/``: it is not part of the installed package (``pip
install .`` installs ``skformer`` only). ``skformer bench NAME`` and ``skformer probe NAME``
find it from a source checkout (an editable install, or the repository on ``sys.path``);
every module also runs as ``python -m benchmarks.<module>`` from the repository root.

Results of long runs are kept under ``benchmarks/results/``.
"""
