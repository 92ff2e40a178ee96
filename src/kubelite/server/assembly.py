"""One function that builds a complete kubelite server on a store: the catalogue, the kind
table and registry, the admission chain (built-in plugins, admission policies, webhooks), the
watch caches, the authenticator and authorizer, the CRD controller, the controller manager
(namespace, ClusterRole aggregation, admission policy status, ServiceAccount, root CA, node IPAM
and node lifecycle controllers, and the simulated cluster's, run by the server that holds its
Lease), the system namespaces, the bootstrap RBAC policy, API Priority and Fairness (its
bootstrap configuration and the flow controller that follows it) and the ASGI app. ``kubelite
serve``, the tests' in-process servers and the testing plugin all use it, so each runs exactly
what the others run.

This is the one place that wires kinds to the generic machinery (as kube-apiserver's control
plane installs each group's storages); the generic modules never import the kinds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from kubelite.api import kinds as kind_table
from kubelite.api.admission.policy.plugins import AdmissionPolicies
from kubelite.api.admission.webhooks import MutatingWebhooks, ValidatingWebhooks, WebhookSource
from kubelite.api.auth.authn import ServiceAccountTokens, TokenAuthenticator
from kubelite.api.auth.authorizer import AlwaysAllow, Authorizer, PrivilegedGroups
from kubelite.api.auth.rbacindex import PolicyFollower, PolicyIndex, RBACAuthorizer
from kubelite.api.catalogue import Catalogue, load_builtin_catalogue
from kubelite.api.controllers.apiserverendpoints import KubernetesEndpoints
from kubelite.api.controllers.crd import CRDController
from kubelite.api.controllers.disruption import DisruptionController
from kubelite.api.controllers.endpoints import EndpointsController
from kubelite.api.controllers.endpointslices import EndpointSliceController
from kubelite.api.controllers.garbagecollector import GarbageCollector
from kubelite.api.controllers.job import JobController
from kubelite.api.controllers.leaderelection import ElectionConfig
from kubelite.api.controllers.manager import ControllerManager
from kubelite.api.controllers.namespace import NamespaceController
from kubelite.api.controllers.nodeipam import NodeIPAMController
from kubelite.api.controllers.nodelifecycle import NodeLifecycleController
from kubelite.api.controllers.podgc import PodGC
from kubelite.api.controllers.policystatus import PolicyStatusController
from kubelite.api.controllers.rbacaggregation import ClusterRoleAggregator
from kubelite.api.controllers.replicaset import (
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    ReplicaSetController,
)
from kubelite.api.controllers.rootcacert import RootCAPublisher
from kubelite.api.controllers.serviceaccounts import ServiceAccountController
from kubelite.api.controllers.ttlafterfinished import TTLAfterFinishedController
from kubelite.api.kinds import BuiltinKinds
from kubelite.api.kinds.core.namespaces import (
    NamespaceLifecycleAdmission,
    ensure_system_namespaces,
    namespace_info,
)
from kubelite.api.kinds.core.serviceaccounts import service_account_lookup
from kubelite.api.kinds.core.serviceaddress import service_resolver
from kubelite.api.kinds.core.serviceallocation import ServiceRanges
from kubelite.api.kinds.core.services import ensure_kubernetes_service
from kubelite.api.kinds.flowcontrol.bootstrap import (
    ensure_flowcontrol_bootstrap,
    flow_schema_info,
    mandatory,
    priority_level_info,
)
from kubelite.api.kinds.rbac.bootstrap import ensure_bootstrap_policy
from kubelite.api.kinds.scheduling.priorityclasses import (
    PriorityAdmission,
    ensure_system_priority_classes,
    priority_class_info,
)
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.watchcache import WatchCacheSet
from kubelite.api.machinery.webhookclient import WebhookClient
from kubelite.api.simulation.cluster import simulated_cluster
from kubelite.api.simulation.config import NodeTimings, Simulation
from kubelite.server.app import KubeliteApp
from kubelite.server.audit import AuditLog
from kubelite.server.faults import Faults, FaultSpec
from kubelite.server.flowcontrol.config import FlowControl
from kubelite.server.flowcontrol.follower import ConfigFollower
from kubelite.server.flowcontrol.gauges import FlowControlGauges
from kubelite.server.healthz import CheckFailed, Health
from kubelite.server.httplog import request_logger
from kubelite.server.metrics import APIMetrics
from kubelite.server.overload import Limits
from kubelite.storage import Store, StoreOptions, open_store
from kubelite.storage.timed import TimedStore

log = logging.getLogger(__name__)

RBAC, ALWAYS_ALLOW = "RBAC", "AlwaysAllow"
AUTHORIZATION_MODES = (RBAC, ALWAYS_ALLOW)


@dataclass
class Assembly:
    """A running server's parts; :meth:`close` stops what :func:`assemble` started (not the
    store, which belongs to whoever opened it)."""

    store: Store
    catalogue: Catalogue
    kinds: BuiltinKinds
    registry: Registry
    caches: WatchCacheSet
    crd_controller: CRDController
    #: kube-controller-manager's controllers, run while this server holds the Lease
    controllers: ControllerManager
    authenticator: TokenAuthenticator | None
    app: KubeliteApp
    metrics: APIMetrics | None = None
    audit: AuditLog | None = None
    #: what keeps the RBAC authorizer's index current (None under ``AlwaysAllow``)
    rbac: PolicyFollower | None = None
    #: the one HTTP client of admission and conversion webhook calls
    webhooks: WebhookClient | None = None
    #: the admission policy plugins and their follower
    policies: AdmissionPolicies | None = None
    #: the admission webhooks in force (followed from the store)
    webhook_source: WebhookSource | None = None
    #: the faults injected into the API's answers (``--inject``), and their counts
    faults: Faults | None = None
    #: API Priority and Fairness's configuration, followed from the store
    flow_control: ConfigFollower | None = None
    #: kube-apiserver's endpoint reconciler for ``default/kubernetes`` (None: no address)
    endpoint_reconciler: KubernetesEndpoints | None = None

    async def close(self) -> None:
        self.app.shutting_down.set()
        if self.endpoint_reconciler is not None:
            await self.endpoint_reconciler.close()
        if self.flow_control is not None:
            await self.flow_control.close()
        if self.policies is not None:
            await self.policies.close()
        if self.rbac is not None:
            await self.rbac.close()
        await self.controllers.close()
        if self.webhook_source is not None:
            await self.webhook_source.close()
        if self.webhooks is not None:
            await self.webhooks.close()
        await self.crd_controller.close()
        await self.caches.close()


async def assemble(
    store: Store,
    *,
    token: str | None,
    catalogue: Catalogue | None = None,
    watch_cache_options: dict[str, Any] | None = None,
    namespace_controller_options: dict[str, Any] | None = None,
    service_ranges: ServiceRanges | None = None,
    metrics: bool = True,
    audit: AuditLog | None = None,
    limits: Limits | None = None,
    authorization_mode: str = RBAC,
    ca_pem: str | None = None,
    leader_election: ElectionConfig | None = None,
    history_retained: tuple[str, ...] = (),
    faults: FaultSpec | None = None,
    simulation: Simulation | None = None,
    apiserver_endpoint: tuple[str, int] | None = None,
    pod_gc_options: dict[str, Any] | None = None,
) -> Assembly:
    """A complete server on ``store``, its controllers started and the system namespaces
    created. ``token`` is the administrator's bearer token (None: no authentication, every
    request is the administrator's, and no service account tokens are issued);
    ``service_ranges`` the Service IP and node port ranges (default kube's); ``metrics``:
    serve ``/metrics`` and time the store's calls; ``audit``: the audit log (its opener
    closes it); ``limits`` the in-flight limits (the seats of API Priority and Fairness, unless it
    is disabled) and the request timeout (default kube's). The
    request log line is on when debug logging is. ``ca_pem``: the CA that signs the serving
    certificate, published in every namespace as ConfigMap ``kube-root-ca.crt`` (None: no
    publisher). ``leader_election``: the Lease's durations (default kube's; on a store only
    this process writes, a Lease left by a previous process is taken at once).
    ``history_retained``: the key prefixes the store keeps past versions of (its
    ``history_retention``), whose resources serve the ``history`` subresource. ``faults``: what
    to inject into the API's answers (:mod:`kubelite.server.faults`; None: nothing).
    ``simulation``: the simulated cluster (nodes, scheduler, kubelets) run with the controllers
    (None: none, as envtest). ``apiserver_endpoint``: this server's advertised IP address and
    secure port, which the Endpoints and EndpointSlice ``default/kubernetes`` name (None, or a
    host that is not an IP address: they are not written). ``pod_gc_options``: the pod garbage
    collector's ``terminated_pod_threshold``, ``gc_period`` and ``quarantine`` (tests shorten
    them)."""
    catalogue = catalogue if catalogue is not None else load_builtin_catalogue()
    backing = store
    api_metrics = None
    if metrics:
        api_metrics = APIMetrics(catalogue, backing)
        store = TimedStore(backing, api_metrics.observe_storage)
    caches = WatchCacheSet(store, **(watch_cache_options or {}))
    ranges = service_ranges or ServiceRanges()
    kinds = BuiltinKinds(
        catalogue,
        ServiceAccountTokens(token) if token else None,
        ranges,
        history_retained,
        resources=kind_table.RESOURCES,
    )
    registry = Registry(store, kinds, caches=caches)
    webhooks = WebhookClient(service_resolver(registry, catalogue))
    kinds.webhook_client = webhooks  # CRD conversion webhooks
    priority = PriorityAdmission(registry, priority_class_info(catalogue))
    registry.admission.mutating.extend(
        [NamespaceLifecycleAdmission(registry, namespace_info(catalogue)), priority]
    )
    registry.admission.validating.append(priority)
    policies = AdmissionPolicies(registry, catalogue, lambda: kinds.authorizer)
    registry.admission.mutating.append(policies.mutating)
    registry.admission.validating.append(policies.validating)
    kinds.policy_settled = policies.follower.settled
    authenticator = None
    if token is not None:
        authenticator = TokenAuthenticator(token, service_account_lookup(registry, catalogue))
        kinds.check_token = authenticator.user_for_token
    crd_controller = CRDController(registry, catalogue, caches, kinds.terminating_custom_kinds)
    kinds.set_crd_caught_up(crd_controller.caught_up)
    await crd_controller.start()
    await policies.start()
    await ensure_system_namespaces(registry, catalogue)
    await ensure_kubernetes_service(registry, catalogue, ranges)
    await ensure_system_priority_classes(registry, catalogue)
    await ensure_bootstrap_policy(registry, catalogue)
    limits = limits or Limits()
    flow_control = None
    if limits.priority_and_fairness:
        flow_control = ConfigFollower(
            registry, flow_schema_info(catalogue), priority_level_info(catalogue),
            FlowControl(limits.server_concurrency, mandatory()),
        )  # fmt: skip
        held = flow_control.held

        async def ensure() -> None:
            await ensure_flowcontrol_bootstrap(registry, catalogue, held)

        flow_control.ensure = ensure
        await flow_control.start()
        # the config producer's first round, from what was listed; served once in force
        written = await ensure_flowcontrol_bootstrap(registry, catalogue, held)
        await flow_control.settle(written)
        if api_metrics is not None:
            api_metrics.registry.register(FlowControlGauges(flow_control.control))
    # admission webhooks: last in each phase, after the admission policies (kube's plugin order)
    webhook_source = WebhookSource(registry, catalogue)
    await webhook_source.start()
    kinds.webhooks_settled = webhook_source.settled
    hook_args = (webhook_source, webhooks, registry, catalogue, policies.namespaces.get)
    registry.admission.mutating.append(
        MutatingWebhooks(*hook_args, authorizer=lambda: kinds.authorizer)
    )
    registry.admission.validating.append(
        ValidatingWebhooks(*hook_args, authorizer=lambda: kinds.authorizer)
    )
    rbac = None
    authorizer: Authorizer = AlwaysAllow()
    if authorization_mode == RBAC:
        index = PolicyIndex()
        rbac = PolicyFollower(registry, catalogue, index)
        await rbac.start()
        authorizer = PrivilegedGroups(RBACAuthorizer(index))
        if token is not None:
            kinds.authorizer = authorizer
            kinds.rbac_settled = rbac.settled
    # the controllers write through the whole admission chain, so they start once it is built
    controllers = controller_manager(
        registry,
        catalogue,
        backing,
        ca_pem,
        leader_election,
        namespace_controller_options,
        simulation,
        pod_gc_options,
    )
    await controllers.start()
    reconciler = None
    if apiserver_endpoint is not None:
        try:
            reconciler = KubernetesEndpoints(registry, catalogue, *apiserver_endpoint)
        except ValueError:
            log.info(
                "%s is not an IP address: no endpoints for the kubernetes service",
                apiserver_endpoint[0],
            )
    if reconciler is not None:
        await reconciler.start()
    if api_metrics is not None:
        api_metrics.add_controllers(
            controllers.queue_depths, lambda: controllers.leading, "kube-controller-manager"
        )
    injected = None if faults is None else Faults(faults)
    if api_metrics is not None and injected is not None:
        api_metrics.add_faults(injected.counts)
    stopping = asyncio.Event()

    async def informers_synced() -> None:
        if not crd_controller.following():
            raise CheckFailed("the CRD controller is not following the store")

    app = KubeliteApp(
        registry,
        catalogue,
        authenticator,
        authorizer=authorizer if authenticator is not None else None,
        anonymous=rbac is not None,
        auditor=audit,
        metrics=api_metrics,
        request_log=request_logger(),
        metrics_document=None if api_metrics is None else api_metrics.exposition,
        limits=limits,
        health=Health.standard(backing, informers_synced, stopping),
        shutting_down=stopping,
        faults=injected,
        flow_control=None if flow_control is None else flow_control.control,
    )
    return Assembly(
        backing,
        catalogue,
        kinds,
        registry,
        caches,
        crd_controller,
        controllers,
        authenticator,
        app,
        api_metrics,
        audit,
        rbac,
        webhooks,
        policies,
        webhook_source,
        injected,
        flow_control,
        reconciler,
    )


def controller_manager(
    registry: Registry,
    catalogue: Catalogue,
    store: Store,
    ca_pem: str | None,
    election: ElectionConfig | None,
    namespace_controller_options: dict[str, Any] | None,
    simulation: Simulation | None = None,
    pod_gc_options: dict[str, Any] | None = None,
) -> ControllerManager:
    """kube-controller-manager's controllers, under kube's controller names, elected through
    the Lease ``kube-system/kube-controller-manager``."""
    election = election or ElectionConfig()
    if store.exclusive and not election.exclusive_store:
        election = replace(election, exclusive_store=True)
    manager = ControllerManager(registry, catalogue, election=election)
    manager.add(
        "namespace-controller",
        NamespaceController(registry, catalogue, **(namespace_controller_options or {})),
    )
    manager.add("clusterrole-aggregation-controller", ClusterRoleAggregator(registry, catalogue))
    manager.add(
        "validatingadmissionpolicy-status-controller", PolicyStatusController(registry, catalogue)
    )
    manager.add("garbage-collector-controller", GarbageCollector(registry, catalogue))
    manager.add("serviceaccount-controller", ServiceAccountController(registry, catalogue))
    manager.add("endpoints-controller", EndpointsController(registry, catalogue))
    manager.add("endpointslice-controller", EndpointSliceController(registry, catalogue))
    manager.add(
        "pod-garbage-collector-controller",
        PodGC(registry, catalogue, **(pod_gc_options or {})),
    )
    manager.add("node-ipam-controller", NodeIPAMController(registry, catalogue))
    timings = simulation.node_timings if simulation is not None else NodeTimings()
    manager.add(
        "node-lifecycle-controller",
        NodeLifecycleController(
            registry,
            catalogue,
            monitor_period=timings.monitor_period,
            grace_period=timings.monitor_grace,
            startup_grace_period=timings.startup_grace,
        ),
    )
    manager.add("disruption-controller", DisruptionController(registry, catalogue))
    manager.add("replicaset-controller", ReplicaSetController(registry, catalogue, REPLICA_SET))
    manager.add(
        "replicationcontroller-controller",
        ReplicaSetController(registry, catalogue, REPLICATION_CONTROLLER),
    )
    backoff_scale = simulation.backoff_scale if simulation is not None else 1.0
    manager.add("job-controller", JobController(registry, catalogue, backoff_scale=backoff_scale))
    manager.add("ttl-after-finished-controller", TTLAfterFinishedController(registry, catalogue))
    if ca_pem is not None:
        manager.add(
            "root-ca-certificate-publisher-controller",
            RootCAPublisher(registry, catalogue, ca_pem),
        )
    else:
        log.info("no CA given: the root CA publisher (ConfigMap kube-root-ca.crt) does not run")
    if simulation is not None:
        for name, controller in simulated_cluster(registry, catalogue, simulation).items():
            manager.add(name, controller)
    return manager


@asynccontextmanager
async def running(
    url: str, store_options: StoreOptions | None = None, **options: Any
) -> AsyncIterator[Assembly]:
    """A server on the store at ``url`` (opened here, closed on exit); ``options`` are
    :func:`assemble`'s."""
    store = await open_store(url, store_options or StoreOptions())
    try:
        assembly = await assemble(store, **options)
        try:
            yield assembly
        finally:
            await assembly.close()
    finally:
        await store.close()
