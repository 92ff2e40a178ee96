"""The core group ("" in the API, kube's ``pkg/registry/core``): one module per resource with
behaviour of its own (pods, bindings, services, service accounts, secrets, nodes, namespaces,
replication controllers, events, component statuses), the core group's defaults
(:mod:`.defaults`, :mod:`.poddefaults`: pkg/apis/core/v1/defaults.go) and validation
(:mod:`.validation`: pkg/apis/core/validation), and the Service IP and port allocator
(:mod:`.serviceallocation`) with the Service address resolver (:mod:`.serviceaddress`).

:data:`RESOURCES` lists every core resource whose strategy is not the default one; the rows
here differ from it only in kube's flags and rules.
"""

from __future__ import annotations

from kubelite.api.kinds.core import (
    bindings,
    componentstatuses,
    events,
    namespaces,
    nodes,
    pods,
    replicationcontrollers,
    secrets,
    serviceaccounts,
    services,
)
from kubelite.api.kinds.core.defaults import (
    default_claim,
    default_endpoints,
    default_limit_range,
    default_resource_quota,
    default_volume,
)
from kubelite.api.kinds.core.poddefaults import default_pod_template
from kubelite.api.kinds.core.validation.configdata import validate_configmap
from kubelite.api.kinds.core.validation.pods import validate_pod_template
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy

RESOURCES: tuple[Resource, ...] = (
    pods.RESOURCE,
    bindings.RESOURCE,
    services.RESOURCE,
    serviceaccounts.RESOURCE,
    secrets.RESOURCE,
    nodes.RESOURCE,
    namespaces.RESOURCE,
    replicationcontrollers.RESOURCE,
    componentstatuses.RESOURCE,
    *events.RESOURCES,
    Resource("", "configmaps", BuiltinStrategy(validators=(validate_configmap,))),
    Resource(
        "",
        "podtemplates",
        BuiltinStrategy(
            defaulters=(default_pod_template,),
            validators=(validate_pod_template,),
            tracks_generation=True,
            returns_deleted_object=True,
        ),
    ),
    Resource(
        "",
        "endpoints",
        BuiltinStrategy(defaulters=(default_endpoints,), allow_create_on_update=True),
    ),
    Resource(
        "",
        "limitranges",
        BuiltinStrategy(defaulters=(default_limit_range,), allow_create_on_update=True),
    ),
    Resource(
        "",
        "resourcequotas",
        BuiltinStrategy(defaulters=(default_resource_quota,), returns_deleted_object=True),
    ),
    Resource(
        "",
        "persistentvolumes",
        BuiltinStrategy(defaulters=(default_volume,), returns_deleted_object=True),
    ),
    Resource(
        "",
        "persistentvolumeclaims",
        BuiltinStrategy(defaulters=(default_claim,), returns_deleted_object=True),
    ),
)
