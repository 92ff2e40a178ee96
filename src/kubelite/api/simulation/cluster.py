"""The simulated cluster's controllers, by kube's component names, for the controller manager
(:func:`kubelite.server.assembly.controller_manager` adds them beside kube-controller-manager's,
under the same leader election: over a shared store exactly one server simulates)."""

from __future__ import annotations

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.manager import Controller
from kubelite.api.machinery.registry import Registry
from kubelite.api.simulation.config import Simulation
from kubelite.api.simulation.kubelet import SimulatedKubelet
from kubelite.api.simulation.nodes import NodeAgent
from kubelite.api.simulation.scheduler import NAME as SCHEDULER
from kubelite.api.simulation.scheduler import Scheduler


def simulated_cluster(
    registry: Registry, catalogue: Catalogue, simulation: Simulation
) -> dict[str, Controller]:
    """The simulation's controllers by name: the node agents, the scheduler, the kubelets."""
    found: dict[str, Controller] = {
        "node-agent": NodeAgent(registry, catalogue, simulation),
        SCHEDULER: Scheduler(registry, catalogue),
        "kubelet": SimulatedKubelet(registry, catalogue, simulation),
    }
    return found
