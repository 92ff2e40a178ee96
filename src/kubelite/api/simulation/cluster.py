"""The simulated cluster's controllers, by kube's component names, for the controller manager
(:func:`kubelite.server.assembly.controller_manager` adds them beside kube-controller-manager's,
under the same leader election: over a shared store exactly one server simulates)."""

from __future__ import annotations

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.manager import Controller
from kubelite.api.machinery.registry import Registry
from kubelite.api.simulation.config import Simulation
from kubelite.api.simulation.kubelet import SimulatedKubelet


def simulated_cluster(
    registry: Registry, catalogue: Catalogue, simulation: Simulation
) -> dict[str, Controller]:
    """The simulation's controllers by name: the node agents, the scheduler, the kubelets."""
    found: dict[str, Controller] = {}
    found["kubelet"] = SimulatedKubelet(registry, catalogue, simulation)
    return found
