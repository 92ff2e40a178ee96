"""The bootstrap RBAC policy of Kubernetes 1.36, as data: the ClusterRoles and ClusterRoleBindings
every cluster has, and the Roles and RoleBindings of ``kube-system`` and ``kube-public``.

This is kube-apiserver's ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy`` (``ClusterRoles()``,
``ClusterRoleBindings()``, ``NamespaceRoles()``, ``NamespaceRoleBindings()``) evaluated with the
feature gates at their 1.36 defaults, written so that the objects come out as kube renders them
in that package's ``testdata/cluster-roles.yaml`` and friends: each rule built as kube's rule
builder does (verbs, groups, resources, names and URLs sorted and made distinct), each object
labelled ``kubernetes.io/bootstrapping: rbac-defaults`` and annotated
``rbac.authorization.kubernetes.io/autoupdate: "true"``. The controllers' own roles
(``controller_policy.go``, ``system:controller:*`` bound to kube-system's service accounts) are
left out: kubelite runs none of those controllers as separate identities.

:mod:`kubelite.api.kinds.rbac.bootstrap` writes these objects at start-up.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"
BOOTSTRAP_LABEL = "kubernetes.io/bootstrapping"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
AGGREGATE_TO = f"{GROUP}/aggregate-to-"

READ = "get list watch"
WRITE = "create update patch delete deletecollection"
READ_WRITE = f"{READ} {WRITE}"
READ_UPDATE = f"{READ} update patch"

#: In the group lists below, ``core`` stands for the legacy group "" (no API group has that name).
_CORE = "core"


def _words(text: str) -> list[str]:
    """Distinct words, sorted (kube's rule builder keeps its lists as sorted sets)."""
    return sorted(set(text.split()))


def rule(verbs: str, groups: str = "", resources: str = "", *, names: str = "") -> Obj:
    """A resource rule; each argument is a space-separated list (``core`` is the group "")."""
    built: Obj = {
        "verbs": _words(verbs),
        "apiGroups": ["" if g == _CORE else g for g in _words(groups)],
        "resources": _words(resources),
    }
    if names:
        built["resourceNames"] = _words(names)
    return built


def url_rule(verbs: str, urls: str) -> Obj:
    """A non-resource rule."""
    return {"verbs": _words(verbs), "nonResourceURLs": _words(urls)}


def _events() -> Obj:
    """kube's ``eventsRule()``: write access to Events in both groups that serve them."""
    return rule("create update patch", "core events.k8s.io", "events")


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {BOOTSTRAP_LABEL: "rbac-defaults", **(labels or {})}
    meta["annotations"] = {AUTOUPDATE: "true"}
    return meta


def _cluster_role(name: str, rules: list[Obj], **labels: str) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterRole",
        "metadata": _meta(name, labels={f"{AGGREGATE_TO}{k}": v for k, v in labels.items()}),
        "rules": rules,
    }


def _aggregated(name: str, to: str, labelled: str = "") -> Obj:
    """A role whose rules the aggregation controller fills from roles labelled aggregate-to-X."""
    role = _cluster_role(name, [], **({labelled: "true"} if labelled else {}))
    role["rules"] = None
    role["aggregationRule"] = {
        "clusterRoleSelectors": [{"matchLabels": {f"{AGGREGATE_TO}{to}": "true"}}]
    }
    return role


def _approver(signer: str) -> Obj:
    name = f"system:certificates.k8s.io:{signer}-approver"
    signer_rule = rule("approve", "certificates.k8s.io", "signers", names=f"kubernetes.io/{signer}")
    return _cluster_role(name, [signer_rule])


_VIEW = [
    rule(READ, _CORE, "pods replicationcontrollers replicationcontrollers/scale serviceaccounts "
         "services services/status endpoints persistentvolumeclaims "
         "persistentvolumeclaims/status configmaps"),
    rule(READ, _CORE, "limitranges resourcequotas bindings pods/status resourcequotas/status "
         "namespaces/status replicationcontrollers/status pods/log"),
    rule(READ, _CORE, "namespaces"),
    rule(READ, "core events.k8s.io", "events"),
    rule(READ, "discovery.k8s.io", "endpointslices"),
    rule(READ, "apps", "controllerrevisions statefulsets statefulsets/status statefulsets/scale "
         "daemonsets daemonsets/status deployments deployments/status deployments/scale "
         "replicasets replicasets/status replicasets/scale"),
    rule(READ, "autoscaling", "horizontalpodautoscalers horizontalpodautoscalers/status"),
    rule(READ, "batch", "jobs cronjobs cronjobs/status jobs/status"),
    rule(READ, "extensions", "daemonsets daemonsets/status deployments deployments/scale "
         "deployments/status ingresses ingresses/status replicasets replicasets/scale "
         "replicasets/status replicationcontrollers/scale networkpolicies"),
    rule(READ, "policy", "poddisruptionbudgets poddisruptionbudgets/status"),
    rule(READ, "networking.k8s.io", "networkpolicies ingresses ingresses/status"),
    rule(READ, "resource.k8s.io", "resourceclaims resourceclaims/status resourceclaimtemplates"),
]  # fmt: skip

_EDIT = [
    rule(READ, _CORE, "pods/attach pods/proxy pods/exec pods/portforward secrets services/proxy"),
    rule("impersonate", _CORE, "serviceaccounts"),
    rule(WRITE, _CORE, "pods pods/attach pods/proxy pods/exec pods/portforward"),
    rule("create", _CORE, "pods/eviction"),
    rule(WRITE, _CORE, "replicationcontrollers replicationcontrollers/scale serviceaccounts "
         "services services/proxy persistentvolumeclaims configmaps secrets"),
    rule("create", _CORE, "serviceaccounts/token"),
    rule(WRITE, "core events.k8s.io", "events"),
    rule(WRITE, "apps", "statefulsets statefulsets/scale daemonsets deployments deployments/scale "
         "deployments/rollback replicasets replicasets/scale"),
    rule(WRITE, "autoscaling", "horizontalpodautoscalers"),
    rule(WRITE, "batch", "jobs cronjobs"),
    rule(WRITE, "extensions", "daemonsets deployments deployments/scale deployments/rollback "
         "ingresses replicasets replicasets/scale replicationcontrollers/scale networkpolicies"),
    rule(WRITE, "policy", "poddisruptionbudgets"),
    rule(WRITE, "networking.k8s.io", "networkpolicies ingresses"),
    rule(READ_WRITE, "coordination.k8s.io", "leases"),
    rule(WRITE, "resource.k8s.io", "resourceclaims resourceclaimtemplates"),
]  # fmt: skip

_NODE = [
    rule("create", "authentication.k8s.io", "tokenreviews"),
    rule("create", "authorization.k8s.io", "subjectaccessreviews localsubjectaccessreviews"),
    rule(READ, _CORE, "services"),
    rule("create get list watch", _CORE, "nodes"),
    rule("update patch", _CORE, "nodes/status"),
    rule("update patch", _CORE, "nodes"),
    rule("create update patch", "core events.k8s.io", "events"),
    rule(READ, _CORE, "pods"),
    rule("create delete", _CORE, "pods"),
    rule("update patch", _CORE, "pods/status"),
    rule("create", _CORE, "pods/eviction"),
    rule(READ, _CORE, "secrets configmaps"),
    rule("get", _CORE, "persistentvolumeclaims persistentvolumes"),
    rule("get", _CORE, "endpoints"),
    rule("create get list watch", "certificates.k8s.io", "certificatesigningrequests"),
    rule("get create update patch delete", "coordination.k8s.io", "leases"),
    rule("get", "storage.k8s.io", "volumeattachments"),
    rule("create", _CORE, "serviceaccounts/token"),
    rule("get update patch", _CORE, "persistentvolumeclaims/status"),
    rule(READ, "storage.k8s.io", "csidrivers"),
    rule("get create update patch delete", "storage.k8s.io", "csinodes"),
    rule(READ, "node.k8s.io", "runtimeclasses"),
    rule("get", "resource.k8s.io", "resourceclaims"),
    rule("deletecollection", "resource.k8s.io", "resourceslices"),
    rule("get", _CORE, "serviceaccounts"),
]

_KUBE_SCHEDULER = [
    _events(),
    rule("create", "coordination.k8s.io", "leases"),
    rule("get update list watch", "coordination.k8s.io", "leases", names="kube-scheduler"),
    rule(READ_WRITE, "coordination.k8s.io", "leasecandidates"),
    rule(READ, _CORE, "nodes"),
    rule("get list watch delete", _CORE, "pods"),
    rule("create", _CORE, "pods/binding bindings"),
    rule("patch update", _CORE, "pods/status"),
    rule(READ, _CORE, "services replicationcontrollers"),
    rule(READ, "apps extensions", "replicasets"),
    rule(READ, "apps", "statefulsets"),
    rule(READ, "policy", "poddisruptionbudgets"),
    rule(READ, _CORE, "persistentvolumeclaims persistentvolumes"),
    rule("create", "authentication.k8s.io", "tokenreviews"),
    rule("create", "authorization.k8s.io", "subjectaccessreviews"),
    rule(READ, "storage.k8s.io", "csinodes"),
    rule(READ, "storage.k8s.io", "volumeattachments"),
    rule(READ, _CORE, "namespaces"),
    rule(READ, "storage.k8s.io", "csidrivers"),
    rule(READ, "storage.k8s.io", "csistoragecapacities"),
    # dynamic resource allocation (GA), DRAExtendedResource and
    # DRAResourceClaimGranularStatusAuthorization (beta, on by default in 1.36)
    rule(READ, "resource.k8s.io", "deviceclasses"),
    rule(READ_UPDATE, "resource.k8s.io", "resourceclaims"),
    rule(READ_UPDATE, "resource.k8s.io", "resourceclaims/status"),
    rule("update", _CORE, "pods/finalizers"),
    rule(READ, "resource.k8s.io", "resourceslices"),
    rule("create delete", "resource.k8s.io", "resourceclaims"),
    rule("update patch", "resource.k8s.io", "resourceclaims/binding"),
]

#: ``/flagz`` and ``/statusz``: ComponentFlagz and ComponentStatusz, beta (on) in 1.36.
_MONITORING_URLS = (
    "/metrics /metrics/slis /livez /readyz /healthz /livez/* /readyz/* /healthz/* /flagz /statusz"
)


def cluster_roles() -> list[Obj]:
    """``ClusterRoles()``, in kube's order (fresh objects: callers may change them)."""
    return [
        _cluster_role("cluster-admin", [rule("*", "*", "*"), url_rule("*", "*")]),
        _cluster_role("system:discovery", [url_rule(
            "get", "/livez /readyz /healthz /version /version/ /openapi /openapi/* /api /api/* "
            "/apis /apis/*",
        )]),
        _cluster_role("system:monitoring", [
            url_rule("get", _MONITORING_URLS), rule("get", _CORE, "nodes/metrics"),
        ]),
        _cluster_role("system:basic-user", [
            rule("create", "authorization.k8s.io",
                 "selfsubjectaccessreviews selfsubjectrulesreviews"),
            rule("create", "authentication.k8s.io", "selfsubjectreviews"),
        ]),
        _cluster_role("system:public-info-viewer", [
            url_rule("get", "/livez /readyz /healthz /version /version/"),
        ]),
        _aggregated("admin", "admin"),
        _aggregated("edit", "edit", labelled="admin"),
        _aggregated("view", "view", labelled="edit"),
        _cluster_role("system:aggregate-to-admin", [
            rule("create", "authorization.k8s.io", "localsubjectaccessreviews"),
            rule(READ_WRITE, GROUP, "roles rolebindings"),
        ], admin="true"),
        _cluster_role("system:aggregate-to-edit", _EDIT, edit="true"),
        _cluster_role("system:aggregate-to-view", _VIEW, view="true"),
        _cluster_role("system:heapster", [
            rule(READ, _CORE, "events pods nodes namespaces"),
            rule(READ, "extensions", "deployments"),
        ]),
        _cluster_role("system:node", _NODE),
        _cluster_role("system:node-problem-detector", [
            rule("get", _CORE, "nodes"), rule("patch", _CORE, "nodes/status"), _events(),
        ]),
        _cluster_role("system:node-bootstrapper", [
            rule("create get list watch", "certificates.k8s.io", "certificatesigningrequests"),
        ]),
        _cluster_role("system:auth-delegator", [
            rule("create", "authentication.k8s.io", "tokenreviews"),
            rule("create", "authorization.k8s.io", "subjectaccessreviews"),
        ]),
        _cluster_role("system:kube-aggregator", [rule(READ, _CORE, "services endpoints")]),
        _cluster_role("system:kube-controller-manager", [
            _events(),
            rule("create", "coordination.k8s.io", "leases"),
            rule("get update", "coordination.k8s.io", "leases", names="kube-controller-manager"),
            rule("create", _CORE, "secrets serviceaccounts"),
            rule("delete", _CORE, "secrets"),
            rule("get", _CORE, "namespaces secrets serviceaccounts configmaps"),
            rule("update", _CORE, "secrets serviceaccounts"),
            rule("create", "authentication.k8s.io", "tokenreviews"),
            rule("create", "authorization.k8s.io", "subjectaccessreviews"),
            rule("list watch", "*", "*"),
            rule("create", _CORE, "serviceaccounts/token"),
        ]),
        _cluster_role("system:kube-dns", [rule("list watch", _CORE, "endpoints services")]),
        _cluster_role("system:persistent-volume-provisioner", [
            rule("get list watch create delete", _CORE, "persistentvolumes"),
            rule("get list watch update", _CORE, "persistentvolumeclaims"),
            rule(READ, "storage.k8s.io", "storageclasses"),
            rule("watch", _CORE, "events"),
            _events(),
        ]),
        _cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
            rule("create", "certificates.k8s.io", "certificatesigningrequests/nodeclient"),
        ]),
        _cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
            rule("create", "certificates.k8s.io", "certificatesigningrequests/selfnodeclient"),
        ]),
        _cluster_role("system:volume-scheduler", [
            rule(READ_UPDATE, _CORE, "persistentvolumes"),
            rule(READ, "storage.k8s.io", "storageclasses"),
            rule(READ_UPDATE, _CORE, "persistentvolumeclaims"),
        ]),
        _approver("legacy-unknown"),
        _approver("kubelet-serving"),
        _approver("kube-apiserver-client"),
        _approver("kube-apiserver-client-kubelet"),
        _cluster_role("system:service-account-issuer-discovery", [url_rule(
            "get", "/.well-known/openid-configuration /.well-known/openid-configuration/ "
            "/openid/v1/jwks /openid/v1/jwks/",
        )]),
        _cluster_role("system:kubelet-api-admin", [
            rule(READ, _CORE, "nodes"),
            rule("proxy", _CORE, "nodes"),
            rule("*", _CORE, "nodes/proxy nodes/metrics nodes/stats nodes/log"),
            rule("*", _CORE, "nodes/pods nodes/healthz nodes/configz"),  # fine-grained authz (GA)
        ]),
        _cluster_role("system:node-proxier", [
            rule("list watch", _CORE, "services endpoints"),
            rule(READ, _CORE, "nodes"),
            _events(),
            rule("list watch", "networking.k8s.io", "servicecidrs"),
            rule("list watch", "discovery.k8s.io", "endpointslices"),
        ]),
        _cluster_role("system:kube-scheduler", _KUBE_SCHEDULER),
    ]  # fmt: skip


# -- bindings ------------------------------------------------------------------------------------


def user(name: str) -> Obj:
    return {"kind": "User", "apiGroup": GROUP, "name": name}


def group(name: str) -> Obj:
    return {"kind": "Group", "apiGroup": GROUP, "name": name}


def service_account(namespace: str, name: str) -> Obj:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def _binding(
    kind: str, name: str, role: str, subjects: list[Obj], namespace: str | None = None
) -> Obj:
    binding: Obj = {"apiVersion": API_VERSION, "kind": kind, "metadata": _meta(name, namespace)}
    if subjects:
        binding["subjects"] = subjects
    role_kind = "Role" if namespace else "ClusterRole"
    binding["roleRef"] = {"apiGroup": GROUP, "kind": role_kind, "name": role}
    return binding


def _cluster_binding(role: str, *subjects: Obj) -> Obj:
    return _binding("ClusterRoleBinding", role, role, list(subjects))


def cluster_role_bindings() -> list[Obj]:
    """``ClusterRoleBindings()``, in kube's order. ``system:node`` keeps no subject (the Node
    authorizer took over in 1.7; the binding stays so that reconciling can drop the group)."""
    kube_scheduler = user("system:kube-scheduler")
    return [
        _cluster_binding("cluster-admin", group("system:masters")),
        _cluster_binding("system:monitoring", group("system:monitoring")),
        _cluster_binding("system:discovery", group("system:authenticated")),
        _cluster_binding("system:basic-user", group("system:authenticated")),
        _cluster_binding(
            "system:public-info-viewer",
            group("system:authenticated"),
            group("system:unauthenticated"),
        ),
        _cluster_binding("system:node-proxier", user("system:kube-proxy")),
        _cluster_binding("system:kube-controller-manager", user("system:kube-controller-manager")),
        _cluster_binding("system:kube-dns", service_account("kube-system", "kube-dns")),
        _cluster_binding("system:kube-scheduler", kube_scheduler),
        _cluster_binding("system:volume-scheduler", kube_scheduler),
        _cluster_binding("system:node"),
        _cluster_binding(
            "system:service-account-issuer-discovery", group("system:serviceaccounts")
        ),
    ]


# -- kube-system and kube-public -----------------------------------------------------------------

_LEADER_LOCKING = [
    rule("get watch list create update", "coordination.k8s.io", "leases"),
    rule("get watch list create update", "coordination.k8s.io", "leasecandidates"),
]


def _role(namespace: str, name: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "Role", "metadata": _meta(name, namespace),
            "rules": rules}  # fmt: skip


def namespace_roles() -> list[Obj]:
    """``NamespaceRoles()``: kube-system's, then kube-public's."""
    system, public = "kube-system", "kube-public"
    return [
        _role(system, "extension-apiserver-authentication-reader", [
            rule(READ, _CORE, "configmaps", names="extension-apiserver-authentication"),
        ]),
        _role(system, "system:controller:bootstrap-signer", [rule(READ, _CORE, "secrets")]),
        _role(system, "system:controller:cloud-provider", [
            rule("create get list watch", _CORE, "configmaps"),
        ]),
        _role(system, "system:controller:token-cleaner", [
            rule("get list watch delete", _CORE, "secrets"), _events(),
        ]),
        _role(system, "system::leader-locking-kube-controller-manager", list(_LEADER_LOCKING)),
        _role(system, "system::leader-locking-kube-scheduler", list(_LEADER_LOCKING)),
        _role(public, "system:controller:bootstrap-signer", [
            rule(READ, _CORE, "configmaps"),
            rule("update", _CORE, "configmaps", names="cluster-info"),
            _events(),
        ]),
    ]  # fmt: skip


def namespace_role_bindings() -> list[Obj]:
    """``NamespaceRoleBindings()``: kube-system's, then kube-public's."""
    system = "kube-system"

    def bind(namespace: str, name: str, role: str, *subjects: Obj) -> Obj:
        return _binding("RoleBinding", name, role, list(subjects), namespace)

    signer = service_account(system, "bootstrap-signer")
    kcm, scheduler = user("system:kube-controller-manager"), user("system:kube-scheduler")
    return [
        bind(system, "system::extension-apiserver-authentication-reader",
             "extension-apiserver-authentication-reader", kcm, scheduler),
        bind(system, "system::leader-locking-kube-controller-manager",
             "system::leader-locking-kube-controller-manager", kcm,
             service_account(system, "kube-controller-manager"),
             service_account(system, "leader-election-controller")),
        bind(system, "system::leader-locking-kube-scheduler",
             "system::leader-locking-kube-scheduler", scheduler,
             service_account(system, "kube-scheduler")),
        bind(system, "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
             signer),
        bind(system, "system:controller:cloud-provider", "system:controller:cloud-provider",
             service_account(system, "cloud-provider")),
        bind(system, "system:controller:token-cleaner", "system:controller:token-cleaner",
             service_account(system, "token-cleaner")),
        bind("kube-public", "system:controller:bootstrap-signer",
             "system:controller:bootstrap-signer", signer),
    ]  # fmt: skip
