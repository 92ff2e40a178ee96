"""The flowcontrol.apiserver.k8s.io kinds' defaults (kube's pkg/apis/flowcontrol/v1/defaults.go)."""

from __future__ import annotations

from kubelite.api.kinds.core.poddefaults import (
    set_if_nil,
    set_if_zero,
    sub,
)
from kubelite.api.kinds.rules import Obj


def default_flow_schema(obj: Obj) -> None:
    """SetDefaults_FlowSchemaSpec: matchingPrecedence 1000."""
    spec = sub(obj, "spec")
    if spec is not None:
        set_if_zero(spec, "matchingPrecedence", 1000)


def default_priority_level(obj: Obj) -> None:
    """SetDefaults_{Limited,Exempt}PriorityLevelConfiguration and SetDefaults_
    QueuingConfiguration."""
    spec = sub(obj, "spec")
    limited = sub(spec, "limited")
    if limited is not None:
        set_if_nil(limited, "nominalConcurrencyShares", 30)
        set_if_nil(limited, "lendablePercent", 0)
        queuing = sub(sub(limited, "limitResponse"), "queuing")
        if queuing is not None:
            set_if_zero(queuing, "handSize", 8)
            set_if_zero(queuing, "queues", 64)
            set_if_zero(queuing, "queueLengthLimit", 50)
    exempt = sub(spec, "exempt")
    if exempt is not None:
        set_if_nil(exempt, "nominalConcurrencyShares", 0)
        set_if_nil(exempt, "lendablePercent", 0)
