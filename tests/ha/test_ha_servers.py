"""Two kubelite servers over one three-member etcd: 32 writers split across them increment one
ConfigMap with retry on conflict, and a watcher on each server checks every change.

- with nothing failing, the count is exactly the increments that landed and both watchers see
  every change once, in the same order;
- with the etcd leader SIGKILLed midway, writes resume after the election, no acknowledged write
  is lost and none lands twice, and watchers go on without a gap (or relist after a 410);
- with one kubelite server SIGKILLed midway, the other's clients see no error at all;
- a killed member, restarted, rejoins: the cluster then keeps serving with another member down.

See tests/ha/load.py for the writers' receipts and the watchers' checks.
"""

from __future__ import annotations

import time

from harness import Server
from load import (
    COUNTER,
    Api,
    Servers,
    Watcher,
    Writer,
    assert_every_change_once_in_order,
    check_final,
    create_counter,
    fresh_prefix,
    run_all,
)

from etcdcluster import EtcdCluster, EtcdMember

WRITERS = 32
QUOTA = 8  # increments each writer lands: 256 in all, each through one CAS on the one key


def start_pair(cluster: EtcdCluster, servers: Servers, first: int, second: int) -> list[Server]:
    """Two servers on one prefix, talking to members ``first`` and ``second`` first."""
    prefix = fresh_prefix()
    return [
        servers.start(cluster.url_via(cluster.members[first], prefix)),
        servers.start(cluster.url_via(cluster.members[second], prefix)),
    ]


def writers_over(pair: list[Server]) -> list[Writer]:
    return [Writer(i, pair[i % 2], QUOTA) for i in range(WRITERS)]


def wait_for_landed(writers: list[Writer], n: int) -> None:
    deadline = time.monotonic() + 60
    while sum(w.landed for w in writers) < n:
        assert time.monotonic() < deadline, "the writers made no progress"
        time.sleep(0.01)


def test_two_servers_32_writers_every_change_seen_once_in_order(
    cluster: EtcdCluster, servers: Servers
) -> None:
    pair = start_pair(cluster, servers, 0, 1)
    rv = create_counter(pair[0])
    writers = writers_over(pair)
    watchers = [Watcher(pair[0], rv), Watcher(pair[1], rv)]
    run_all(writers, watchers)
    final = check_final(pair[1], writers)
    assert final == WRITERS * QUOTA
    assert sum(w.acknowledged for w in writers) == final  # nothing failed: all answered
    assert sum(w.conflicts for w in writers) > 0  # they did race for the same version
    for watcher in watchers:
        assert not watcher.relisted_at
        assert_every_change_once_in_order(watcher, 0, final)
    assert watchers[0].counts == watchers[1].counts


def test_etcd_leader_sigkill_under_load_loses_no_acknowledged_write(
    cluster: EtcdCluster, servers: Servers
) -> None:
    leader = cluster.members.index(cluster.leader())
    follower = (leader + 1) % 3
    # One server streams from the leader (its connections break), one from a follower (it
    # waits out the election).
    pair = start_pair(cluster, servers, leader, follower)
    rv = create_counter(pair[0])
    writers = writers_over(pair)
    watchers = [Watcher(pair[0], rv), Watcher(pair[1], rv)]
    killed_at: list[float] = []

    def kill_the_leader() -> None:
        wait_for_landed(writers, WRITERS * QUOTA // 3)
        cluster.members[leader].kill()
        killed_at.append(time.monotonic())

    run_all(writers, watchers, kill_the_leader)
    final = check_final(pair[1], writers)
    assert final == WRITERS * QUOTA
    after = sum(t > killed_at[0] for w in writers for t in w.landed_at)
    assert after > 0, "no write landed after the leader was killed"
    for watcher in watchers:
        assert_every_change_once_in_order(watcher, 0, final)
    if not any(w.relisted_at for w in watchers):
        assert watchers[0].counts == watchers[1].counts


def test_killing_one_server_leaves_the_other_servers_clients_unaffected(
    cluster: EtcdCluster, servers: Servers
) -> None:
    victim, survivor = start_pair(cluster, servers, 0, 1)
    rv = create_counter(survivor)
    writers = writers_over([victim, survivor])
    watchers = [Watcher(survivor, rv)]

    def kill_a_server() -> None:
        wait_for_landed(writers, WRITERS * QUOTA // 3)
        victim.process.kill()  # SIGKILL
        victim.process.wait()
        for writer in writers:
            if writer.server is victim:
                writer.stop.set()

    run_all(writers, watchers, kill_a_server)
    final = check_final(survivor, writers)  # the victim's open writes resolved by receipt
    for writer in writers:
        if writer.server is survivor:
            assert writer.landed == QUOTA
            assert (writer.unknown, writer.failed_reads) == (0, 0), writer
    assert_every_change_once_in_order(watchers[0], 0, final)


def test_killed_member_rejoins_and_the_cluster_keeps_serving(
    cluster: EtcdCluster, servers: Servers
) -> None:
    victim = cluster.leader()
    others = [m for m in cluster.members if m is not victim]
    server = servers.start(cluster.url_via(others[0], fresh_prefix()))
    create_counter(server)
    victim.kill()
    put_counter(server, "while-down")
    cluster.restart(victim)  # rejoins on its data dir and catches up
    # With another member down, the restarted one is needed for the quorum: writes through the
    # remaining member work only if it rejoined.
    others[0].kill()
    server2 = servers.start(cluster.url_via(others[1], fresh_prefix()))
    create_counter(server2)
    revision = put_counter(server2, "after-rejoin")
    deadline = time.monotonic() + 30
    while member_revision(victim) < revision:  # the rejoined member has that write too
        assert time.monotonic() < deadline, "the restarted member did not catch up"
        time.sleep(0.05)


def member_revision(member: EtcdMember) -> int:
    status = member.status()
    return int(status["header"]["revision"]) if status else 0  # type: ignore[index]


def put_counter(server: Server, value: str) -> int:
    """Write ``value`` into the counter (retrying through an election); its resourceVersion."""
    with Api(server) as api:
        return _put_note(api, value)


def _put_note(api: Api, value: str) -> int:
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline, "no write went through"
        status, obj = api.request("GET", COUNTER)
        if status == 200:
            obj["data"]["note"] = value
            status, written = api.request("PUT", COUNTER, obj)
            if status == 200:
                return int(written["metadata"]["resourceVersion"])
        time.sleep(0.1)


def test_servers_over_one_etcd_share_one_ca_and_admin_token(
    cluster: EtcdCluster, servers: Servers
) -> None:
    """The first server stores its CA and token; the second, with a data dir of its own, adopts
    them: either's kubeconfig and token work on both, with no file copied by hand."""
    first, second = start_pair(cluster, servers, 0, 1)
    assert first.token == second.token
    assert (first.data_dir / "ca.crt").read_bytes() == (second.data_dir / "ca.crt").read_bytes()
    # the second server's certificate verifies against the first server's kubeconfig CA
    borrowed = Server(second.url, first.token, first.kubeconfig, first.data_dir, second.process)
    status, body = borrowed.request("GET", "/api/v1/namespaces/default")
    assert status == 200, body


def test_a_binding_written_on_one_server_comes_into_force_on_the_other(
    cluster: EtcdCluster, servers: Servers
) -> None:
    """Each server's authorizer follows the RBAC kinds in etcd: a RoleBinding written through
    the first allows alice on the second, and its deletion ends that. (The delay is the watch's,
    measured in milliseconds here; the 30 s bound only keeps a broken watch from hanging.)"""
    first, second = start_pair(cluster, servers, 0, 1)
    alice = first.user_certificate("alice")  # signed by the CA both servers share
    configmaps = "/api/v1/namespaces/default/configmaps"
    assert second.request("GET", configmaps, cert=alice)[0] == 403
    binding = {
        "metadata": {"name": "alice-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
    }
    rolebindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    assert first.request("POST", rolebindings, binding)[0] == 201
    written = time.monotonic()
    while second.request("GET", configmaps, cert=alice)[0] != 200:
        assert time.monotonic() - written < 30, "never in force on the other server"
        time.sleep(0.02)
    assert first.request("DELETE", f"{rolebindings}/alice-view")[0] == 200
    deleted = time.monotonic()
    while second.request("GET", configmaps, cert=alice)[0] != 403:
        assert time.monotonic() - deleted < 30, "still in force on the other server"
        time.sleep(0.02)
