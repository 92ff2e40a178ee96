"""kubelite: a Kubernetes-compatible API server in Python.

The storage engine lives in :mod:`kubelite.storage`; see ARCHITECTURE.md for the layers.
"""

__version__ = "0.1.0"
