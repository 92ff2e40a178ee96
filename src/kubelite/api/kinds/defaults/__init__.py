"""Built-in kinds' defaults (kube-apiserver's ``SetDefaults_*``), one module per API group family,
each exporting ``DEFAULTERS`` (see :mod:`kubelite.api.kinds.rules`)."""

from __future__ import annotations

from kubelite.api.kinds.defaults import batch, core, networking, platform, pods, workloads

MODULES = (pods, workloads, batch, core, networking, platform)
