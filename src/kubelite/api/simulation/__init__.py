"""The simulated cluster: what kubelets and kube-scheduler do, without containers (as kwok does),
so that pods are scheduled, run and stop in a test as on a kind cluster.

- :mod:`.config`: :class:`Simulation`, the server's ``--nodes``, ``--node-capacity`` and
  ``--simulate-backoff-scale``;
- :mod:`.cluster`: the simulation's controllers, run once per cluster under
  kube-controller-manager's leader election like the other controllers.
- :mod:`.nodes`: ``node-agent``, the simulated kubelets' work for their Nodes (registration,
  node status, Leases, the kubelet's Node events); :mod:`.nodestatus`: what they write.

A Node is simulated when it carries the annotation ``kubelite.dev/simulated: "true"``: the nodes
``--nodes`` registers do, and so may a Node a test creates. Everything a client observes comes
from ordinary writes through the registry (Nodes, Leases, pods' bindings and status, Events), each
conflict-checked, as a real kubelet's and scheduler's writes are.
"""
