"""The etcd backend: the storage contract over an etcd cluster (``etcd://h1:2379,h2:2379``).

``store`` (the contract, as kube-apiserver's transactions), ``watch`` (one etcd watch stream per
store watch, resumed on another member), ``endpoints`` (the URL, the member list, fail-over, what a
gRPC failure means), ``keyspace`` (the key prefix and protobuf conversions). Needs ``aetcd``
(``pip install kubelite[etcd]``).
"""

from kubelite.storage.etcd.endpoints import EtcdURL
from kubelite.storage.etcd.store import EtcdStore

__all__ = ["EtcdStore", "EtcdURL"]
