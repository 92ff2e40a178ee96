"""Built-in kinds' validation (kube-apiserver's ``Validate*``), one module per kind family, each
exporting ``VALIDATORS`` (see :mod:`kubelite.api.kinds.rules`)."""

from __future__ import annotations

from kubelite.api.kinds.validation import (
    admissionpolicies,
    batch,
    configdata,
    flowcontrol,
    networking,
    pods,
    podupdate,
    rbac,
    services,
    workloads,
)

MODULES = (
    pods,
    podupdate,
    configdata,
    workloads,
    services,
    batch,
    networking,
    rbac,
    admissionpolicies,
    flowcontrol,
)
