"""ncore from Python: `ncore.nki` runs NKI-style kernels on ncore's golden and RTL cores
(tb/python/README.md)."""
