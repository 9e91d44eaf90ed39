"""Kernels in the current NKI dialect (`import nki`, Neuron 2.27 and later); check_kernels.py
runs them after ncore.nki.alias_nki()."""
