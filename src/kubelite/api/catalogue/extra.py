"""What the maintained data lacks: hand-written additions to the built-in catalogue.

:mod:`kubelite.api.catalogue` derives every built-in kind (group, version, kind, plural, scope,
verbs, subresources) from lightkube-models and its OpenAPI definition from kubernetes-validate.
This module adds only what neither package carries, as small tables keyed by ``(group, plural)``
(so both served versions of a kind, e.g. autoscaling/v1 and v2 HorizontalPodAutoscaler, share an
entry). It is plain data and imports nothing from kubelite.

Sources, all Kubernetes 1.3x (kubernetes/kubernetes, read at the commits the 1.37 packages
follow):

- short names and categories: each kind's ``ShortNames()``/``Categories()`` in
  ``pkg/registry/*/*/storage/storage.go`` (what ``kubectl api-resources`` prints);
- table columns: ``pkg/printers/internalversion/printers.go``, restricted to the columns a JSON
  path can express (see :class:`ColumnSpec`);
- group order: the APIService group priorities kube-apiserver registers
  (``pkg/controlplane/apiserver/aggregator.go`` and its kube-specific list).

Editing this file invalidates the catalogue cache (its bytes are part of the cache key).
"""

from __future__ import annotations

from typing import NamedTuple

Key = tuple[str, str]  # (group, plural); group "" is the core group


class ColumnSpec(NamedTuple):
    """One Table column, rendered from the object by ``render`` over ``json_path``.

    ``render`` is one of (see :func:`kubelite.api.catalogue.render_cell`):

    - ``value``: the value at the path (several matches joined with ``,``), else ``default``;
    - ``age``: the RFC 3339 timestamp at the path as a human duration (``45s``, ``2m10s``);
    - ``count``: how many nodes the path matches, or entries of the map or list a bracket-free
      path ends at (several paths, comma-separated, add up);
    - ``sum``: the sum of the numbers the path matches;
    - ``ratio``: ``"<a>/<b>"``; each side is the sum of its numeric matches or, when they are
      not numbers, how many there are (``readyReplicas/replicas``, ready containers/containers);
    - ``pod-status``, ``pod-ready``, ``pod-restarts``: a pod's STATUS, READY (sidecars
      counted) and RESTARTS (``3 (12s ago)``) as kube's printPod derives them;
    - ``job-status``, ``job-completions``, ``job-duration``: a Job's STATUS, COMPLETIONS and
      DURATION as kube's printJob derives them.
    """

    name: str
    json_path: str
    type: str = "string"
    render: str = "value"
    priority: int = 0
    default: str | int | bool | None = None
    format: str = ""
    description: str = ""


NAME = ColumnSpec(
    "Name",
    ".metadata.name",
    format="name",
    description="Name must be unique within a namespace.",
)
AGE = ColumnSpec(
    "Age",
    ".metadata.creationTimestamp",
    render="age",
    default="<unknown>",
    description="CreationTimestamp is a timestamp representing the server time when this object "
    "was created.",
)
CREATED_AT = ColumnSpec(
    "Created At",
    ".metadata.creationTimestamp",
    type="date",
    description="CreationTimestamp is a timestamp representing the server time when this object "
    "was created.",
)

#: Columns of every kind not listed in TABLE_COLUMNS.
DEFAULT_COLUMNS: tuple[ColumnSpec, ...] = (NAME, AGE)

# Versions: kube-apiserver 1.37 serves every GA version by default and no alpha version; since
# 1.24 new beta APIs are off by default, and no beta API of 1.37 predates that. So the catalogue
# serves exactly the GA versions lightkube-models ships (catalogue.SERVED_VERSION); these two sets
# adjust that rule per group-version should it ever need to.
EXTRA_SERVED_GROUP_VERSIONS: frozenset[tuple[str, str]] = frozenset()
UNSERVED_GROUP_VERSIONS: frozenset[tuple[str, str]] = frozenset()

#: Subresources kubelite serves (their storages: kubelite.api.machinery.subresources and .kinds);
#: the others lightkube knows (pods/resize, certificatesigningrequests/approval) are listed in
#: ResourceInfo.known_subresources with served=False and are neither routed nor discovered.
SERVED_SUBRESOURCES: frozenset[str] = frozenset(
    {"status", "scale", "finalize", "token", "binding", "eviction", "ephemeralcontainers", "log"}
)

#: /apis order: kube-apiserver sorts groups by APIService group priority (then by name), which
#: is this order; apiregistration.k8s.io, served by the aggregator itself, comes first.
GROUP_ORDER: tuple[str, ...] = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "resource.k8s.io",
    "storagemigration.k8s.io",
)

SHORT_NAMES: dict[Key, tuple[str, ...]] = {
    ("", "componentstatuses"): ("cs",),
    ("", "configmaps"): ("cm",),
    ("", "endpoints"): ("ep",),
    ("", "events"): ("ev",),
    ("", "limitranges"): ("limits",),
    ("", "namespaces"): ("ns",),
    ("", "nodes"): ("no",),
    ("", "persistentvolumeclaims"): ("pvc",),
    ("", "persistentvolumes"): ("pv",),
    ("", "pods"): ("po",),
    ("", "replicationcontrollers"): ("rc",),
    ("", "resourcequotas"): ("quota",),
    ("", "serviceaccounts"): ("sa",),
    ("", "services"): ("svc",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("crd", "crds"),
    ("apps", "daemonsets"): ("ds",),
    ("apps", "deployments"): ("deploy",),
    ("apps", "replicasets"): ("rs",),
    ("apps", "statefulsets"): ("sts",),
    ("autoscaling", "horizontalpodautoscalers"): ("hpa",),
    ("batch", "cronjobs"): ("cj",),
    ("certificates.k8s.io", "certificatesigningrequests"): ("csr",),
    ("events.k8s.io", "events"): ("ev",),
    ("networking.k8s.io", "ingresses"): ("ing",),
    ("networking.k8s.io", "networkpolicies"): ("netpol",),
    ("policy", "poddisruptionbudgets"): ("pdb",),
    ("scheduling.k8s.io", "priorityclasses"): ("pc",),
    ("storage.k8s.io", "storageclasses"): ("sc",),
    ("storage.k8s.io", "volumeattributesclasses"): ("vac",),
}

CATEGORIES: dict[Key, tuple[str, ...]] = {
    ("", "pods"): ("all",),
    ("", "replicationcontrollers"): ("all",),
    ("", "services"): ("all",),
    ("apps", "daemonsets"): ("all",),
    ("apps", "deployments"): ("all",),
    ("apps", "replicasets"): ("all",),
    ("apps", "statefulsets"): ("all",),
    ("autoscaling", "horizontalpodautoscalers"): ("all",),
    ("batch", "cronjobs"): ("all",),
    ("batch", "jobs"): ("all",),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): ("api-extensions",),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): ("api-extensions",),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): ("api-extensions",),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): ("api-extensions",),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): ("api-extensions",),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): ("api-extensions",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("api-extensions",),
    ("apiregistration.k8s.io", "apiservices"): ("api-extensions",),
}

#: Kinds served at several versions over one storage, as kube-apiserver does: (group, plural) ->
#: (the group, version) that owns the keys and the stored form. Conversions between the stored
#: and served forms are in kubelite.api.encoding.conversion.
SHARED_STORAGE: dict[Key, tuple[str, str]] = {
    ("", "events"): ("", "v1"),
    ("events.k8s.io", "events"): ("", "v1"),
    ("autoscaling", "horizontalpodautoscalers"): ("autoscaling", "v2"),
}


def _int(name: str, path: str, priority: int = 0, description: str = "") -> ColumnSpec:
    return ColumnSpec(name, path, "integer", default=0, priority=priority, description=description)


def _str(name: str, path: str, priority: int = 0, default: str = "<none>") -> ColumnSpec:
    return ColumnSpec(name, path, default=default, priority=priority)


_REPLICA_COLUMNS = (
    NAME,
    _int("Desired", ".spec.replicas"),
    _int("Current", ".status.replicas"),
    _int("Ready", ".status.readyReplicas"),
    AGE,
)

TABLE_COLUMNS: dict[Key, tuple[ColumnSpec, ...]] = {
    ("", "configmaps"): (NAME, ColumnSpec("Data", ".data,.binaryData", "integer", "count"), AGE),
    ("", "events"): (
        NAME,
        ColumnSpec("Last Seen", ".lastTimestamp", render="age", default="<unknown>"),
        _str("Type", ".type"),
        _str("Reason", ".reason"),
        _str("Message", ".message"),
        AGE,
    ),
    ("", "namespaces"): (NAME, _str("Status", ".status.phase", default="Active"), AGE),
    ("", "nodes"): (
        NAME,
        ColumnSpec("Status", ".status", render="node-status", description="The status of the node"),
        ColumnSpec(
            "Roles", ".metadata.labels", render="node-roles", description="The roles of the node"
        ),
        AGE,
        ColumnSpec(
            "Version",
            ".status.nodeInfo.kubeletVersion",
            default="",
            description="Kubelet Version reported by the node.",
        ),
        _str("Internal-IP", '.status.addresses[?(@.type=="InternalIP")].address', priority=1),
        _str("External-IP", '.status.addresses[?(@.type=="ExternalIP")].address', priority=1),
        _str("OS-Image", ".status.nodeInfo.osImage", priority=1, default="<unknown>"),
        _str("Kernel-Version", ".status.nodeInfo.kernelVersion", priority=1, default="<unknown>"),
        _str(
            "Container-Runtime",
            ".status.nodeInfo.containerRuntimeVersion",
            priority=1,
            default="<unknown>",
        ),
    ),
    ("", "persistentvolumeclaims"): (
        NAME,
        _str("Status", ".status.phase", default="Pending"),
        _str("Volume", ".spec.volumeName", default=""),
        _str("Capacity", ".status.capacity.storage", default=""),
        _str("StorageClass", ".spec.storageClassName"),
        AGE,
    ),
    ("", "persistentvolumes"): (
        NAME,
        _str("Capacity", ".spec.capacity.storage", default=""),
        _str("Reclaim Policy", ".spec.persistentVolumeReclaimPolicy", default="Retain"),
        _str("Status", ".status.phase", default="Pending"),
        _str("StorageClass", ".spec.storageClassName", default=""),
        AGE,
    ),
    ("", "pods"): (
        NAME,
        ColumnSpec(
            "Ready",
            ".status.containerStatuses[?(@.ready==true)]/.spec.containers[*]",
            render="pod-ready",
            description="The aggregate readiness state of this pod for accepting traffic.",
        ),
        ColumnSpec(
            "Status",
            ".status.phase",
            render="pod-status",
            default="Pending",
            description="The aggregate status of the containers in this pod.",
        ),
        ColumnSpec(
            "Restarts",
            ".status.containerStatuses[*].restartCount",
            "string",
            "pod-restarts",
            description="The number of times the containers in this pod have been restarted.",
        ),
        AGE,
        _str("IP", ".status.podIP", priority=1),
        _str("Node", ".spec.nodeName", priority=1),
        _str("Nominated Node", ".status.nominatedNodeName", priority=1),
    ),
    ("", "replicationcontrollers"): _REPLICA_COLUMNS,
    ("", "secrets"): (
        NAME,
        _str("Type", ".type", default="Opaque"),
        ColumnSpec("Data", ".data", "integer", "count"),
        AGE,
    ),
    ("", "serviceaccounts"): (NAME, ColumnSpec("Secrets", ".secrets[*]", "integer", "count"), AGE),
    ("", "services"): (
        NAME,
        _str("Type", ".spec.type", default="ClusterIP"),
        _str("Cluster-IP", ".spec.clusterIP"),
        AGE,
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (NAME, CREATED_AT),
    ("apps", "controllerrevisions"): (NAME, _int("Revision", ".revision"), AGE),
    ("apps", "daemonsets"): (
        NAME,
        _int("Desired", ".status.desiredNumberScheduled"),
        _int("Current", ".status.currentNumberScheduled"),
        _int("Ready", ".status.numberReady"),
        _int("Up-to-date", ".status.updatedNumberScheduled"),
        _int("Available", ".status.numberAvailable"),
        AGE,
    ),
    ("apps", "deployments"): (
        NAME,
        ColumnSpec(
            "Ready",
            ".status.readyReplicas/.spec.replicas",
            render="ratio",
            description="Number of the pod with ready state",
        ),
        _int(
            "Up-to-date",
            ".status.updatedReplicas",
            description="Total number of non-terminated "
            "pods targeted by this deployment that have the desired template spec.",
        ),
        _int(
            "Available",
            ".status.availableReplicas",
            description="Total number of available "
            "pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
        AGE,
    ),
    ("apps", "replicasets"): _REPLICA_COLUMNS,
    ("apps", "statefulsets"): (
        NAME,
        ColumnSpec("Ready", ".status.readyReplicas/.spec.replicas", render="ratio"),
        AGE,
    ),
    ("autoscaling", "horizontalpodautoscalers"): (
        NAME,
        _int("MinPods", ".spec.minReplicas"),
        _int("MaxPods", ".spec.maxReplicas"),
        _int("Replicas", ".status.currentReplicas"),
        AGE,
    ),
    ("batch", "cronjobs"): (
        NAME,
        _str("Schedule", ".spec.schedule", default=""),
        _str("Timezone", ".spec.timeZone"),
        ColumnSpec("Suspend", ".spec.suspend", "boolean", default=False),
        ColumnSpec("Active", ".status.active[*]", "integer", "count"),
        ColumnSpec("Last Schedule", ".status.lastScheduleTime", render="age", default="<none>"),
        AGE,
    ),
    ("batch", "jobs"): (
        NAME,
        ColumnSpec("Status", ".status", render="job-status", description="Status of the job."),
        ColumnSpec("Completions", ".status.succeeded", render="job-completions"),
        ColumnSpec(
            "Duration",
            ".status",
            render="job-duration",
            description="Time required to complete the job.",
        ),
        AGE,
    ),
    ("coordination.k8s.io", "leases"): (
        NAME,
        _str("Holder", ".spec.holderIdentity", default=""),
        AGE,
    ),
    ("discovery.k8s.io", "endpointslices"): (NAME, _str("AddressType", ".addressType"), AGE),
    ("events.k8s.io", "events"): (
        NAME,
        _str("Type", ".type"),
        _str("Reason", ".reason"),
        _str("Note", ".note"),
        AGE,
    ),
    ("networking.k8s.io", "ingressclasses"): (NAME, _str("Controller", ".spec.controller"), AGE),
    ("networking.k8s.io", "ingresses"): (
        NAME,
        _str("Class", ".spec.ingressClassName"),
        _str("Hosts", ".spec.rules[*].host", default="*"),
        _str("Address", ".status.loadBalancer.ingress[*].ip", default=""),
        AGE,
    ),
    ("node.k8s.io", "runtimeclasses"): (NAME, _str("Handler", ".handler"), AGE),
    ("policy", "poddisruptionbudgets"): (
        NAME,
        _str("Min Available", ".spec.minAvailable", default="N/A"),
        _str("Max Unavailable", ".spec.maxUnavailable", default="N/A"),
        _int("Allowed Disruptions", ".status.disruptionsAllowed"),
        AGE,
    ),
    ("rbac.authorization.k8s.io", "clusterroles"): (NAME, CREATED_AT),
    ("rbac.authorization.k8s.io", "roles"): (NAME, CREATED_AT),
    ("scheduling.k8s.io", "priorityclasses"): (
        NAME,
        _int("Value", ".value"),
        ColumnSpec("Global-Default", ".globalDefault", "boolean", default=False),
        AGE,
    ),
    ("storage.k8s.io", "storageclasses"): (
        NAME,
        _str("Provisioner", ".provisioner", default=""),
        _str("ReclaimPolicy", ".reclaimPolicy", default="Delete"),
        _str("VolumeBindingMode", ".volumeBindingMode", default="Immediate"),
        ColumnSpec("AllowVolumeExpansion", ".allowVolumeExpansion", "boolean", default=False),
        AGE,
    ),
    ("", "limitranges"): (NAME, CREATED_AT),
}


# --- field selectors ---------------------------------------------------------------------------


class FieldLabelSpec(NamedTuple):
    """A field label a kind's field selectors accept: read at ``paths`` (dotted, into the object
    as served; the first holding a non-empty scalar wins; default: the label itself), ``zero``
    when none does (the Go zero value GetAttrs renders for an absent field). ``paths=("",)``: a
    label the conversion accepts but GetAttrs never sets (always ``zero``)."""

    name: str
    paths: tuple[str, ...] = ()
    zero: str = ""


def _labels(*specs: str | FieldLabelSpec) -> tuple[FieldLabelSpec, ...]:
    return tuple(FieldLabelSpec(s) if isinstance(s, str) else s for s in specs)


_META = ("metadata.name", "metadata.namespace")
_INVOLVED = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

#: Field labels per kind, each from kube's fieldLabelConversionFunc for the served version
#: (pkg/apis/<group>/<version>/conversion.go) and the value its GetAttrs / ToSelectableFields
#: gives (pkg/registry/<group>/<kind>/strategy.go). Kinds not listed register no conversion:
#: runtime's default, metadata.name and metadata.namespace. ReplicaSet is one of them: its
#: strategy sets status.replicas but apps/v1 registers no conversion, so a cluster refuses the
#: label (kubernetes/kubernetes#135136); StatefulSet's status.successful was apps/v1beta1/2 only.
FIELD_LABELS: dict[Key, tuple[FieldLabelSpec, ...]] = {
    ("", "pods"): _labels(
        *_META,
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        # v1 -> internal: an empty serviceAccountName takes the deprecated serviceAccount
        FieldLabelSpec(
            "spec.serviceAccountName", ("spec.serviceAccountName", "spec.serviceAccount")
        ),
        FieldLabelSpec("spec.hostNetwork", zero="false"),
        "status.phase",
        # the internal podIPs[0], which v1's podIPs[0].ip or else podIP converts to
        FieldLabelSpec("status.podIP", ("status.podIPs.0.ip", "status.podIP")),
        FieldLabelSpec("status.podIPs", ("",)),  # accepted, never set: matches only ""
        "status.nominatedNodeName",
        FieldLabelSpec("spec.host", ("spec.nodeName",)),  # old v1 clients' name for it
    ),
    ("", "nodes"): _labels("metadata.name", FieldLabelSpec("spec.unschedulable", zero="false")),
    ("", "replicationcontrollers"): _labels(*_META, FieldLabelSpec("status.replicas", zero="0")),
    ("", "events"): _labels(
        *(f"involvedObject.{f}" for f in _INVOLVED),
        "reason",
        "reportingComponent",
        FieldLabelSpec("source", ("source.component", "reportingComponent")),
        "type",
        *_META,
    ),
    ("events.k8s.io", "events"): _labels(
        "reason",
        *(f"regarding.{f}" for f in _INVOLVED),
        "reportingController",
        FieldLabelSpec("source", ("deprecatedSource.component", "reportingController")),
        "type",
        *_META,
    ),
    ("", "namespaces"): _labels("status.phase", "metadata.name"),
    ("", "secrets"): _labels("type", *_META),
    ("", "services"): _labels(*_META, "spec.clusterIP", "spec.type"),
    ("batch", "jobs"): _labels(
        *_META, FieldLabelSpec("status.successful", ("status.succeeded",), "0")
    ),
    ("certificates.k8s.io", "certificatesigningrequests"): _labels(
        "metadata.name", "spec.signerName"
    ),
    ("certificates.k8s.io", "clustertrustbundles"): _labels("metadata.name", "spec.signerName"),
    ("certificates.k8s.io", "podcertificaterequests"): _labels(
        "metadata.name", "spec.signerName", "spec.podName", "spec.nodeName"
    ),
    ("resource.k8s.io", "resourceslices"): _labels("metadata.name", "spec.nodeName", "spec.driver"),
}

#: A kind's own wording of the 400 for a label it lacks (``{label}``; ``{quoted}``: Go's %q of
#: it); kinds with labels above and no entry here say ``field label not supported: <label>``.
FIELD_LABEL_ERRORS: dict[Key, str] = {
    ("batch", "jobs"): "field label {quoted} not supported for batchv1.Job",
    ("resource.k8s.io", "resourceslices"): (
        "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: {label}"
    ),
}


#: Kinds no object may name as its owner (apimachinery's BannedOwners in ownerReferences
#: validation), by (group, version, kind).
BANNED_OWNERS: frozenset[tuple[str, str, str]] = frozenset({("", "v1", "Event")})


#: The built-in versions kube marks deprecated (their types' ``APILifecycleDeprecated`` and
#: ``APILifecycleReplacement``), by (group, version, plural): the warning every request to them
#: is answered with, as apiserver's ``deprecation.WarningMessage`` words it.
DEPRECATED_VERSIONS: dict[tuple[str, str, str], str] = {
    ("", "v1", "endpoints"): (
        "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
    ),
    ("", "v1", "componentstatuses"): "v1 ComponentStatus is deprecated in v1.19+",
}
