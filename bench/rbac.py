"""What RBAC costs a request: PUT/s and GET/s of a user whose rights come from a RoleBinding,
on a server with ``--authorization-mode RBAC`` against one with ``AlwaysAllow``, each holding
1,000 Roles, 1,000 RoleBindings, 200 ClusterRoles and 200 ClusterRoleBindings for other users.

Both servers run side by side (pinned to CPU 0, wrk to CPU 1) and are measured in alternating
rounds with the same wrk scripts as ``bench/api.py`` (conflict-checked PUTs of 64 ConfigMaps,
and GETs of one by name), as service account ``bench`` with a token from its TokenRequest (wrk
sends no client certificates), so every request is decided by the authorizer (an administrator
in ``system:masters`` would bypass RBAC).
Every other feature is on, as ``kubelite serve`` runs by default.

Run:
    .venv/bin/python bench/rbac.py            # ~2 min
    .venv/bin/python bench/rbac.py --quick    # smoke run, ~40 s
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api as base

ROLES = 1000
CLUSTER_ROLES = 200
NAMESPACES = 10
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"


def start(parent: Path, mode: str) -> base.Proc:
    proc = base.start_kubelite(parent / mode / "data", "--authorization-mode", mode)
    base.wait_ready(proc)
    return proc


BENCH = {"kind": "ServiceAccount", "name": "bench", "namespace": base.NS_PUT}
BENCH_USER = f"system:serviceaccount:{base.NS_PUT}:bench"


async def account_token(proc: base.Proc) -> str:
    """A token of the service account ``bench`` (TokenRequest, as ``kubectl create token``)."""
    async with base.Api(proc) as api:
        path = f"/api/v1/namespaces/{base.NS_PUT}/serviceaccounts/bench/token"
        status, out = await api.call("POST", path, {"spec": {"expirationSeconds": 86400}})
        assert status == 201, out
        token: str = out["status"]["token"]
        return token


def _role(name: str, ns: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"],
         "resourceNames": [name]},
    ]}  # fmt: skip


def _binding(name: str, ns: str | None, kind: str, role: str, user: str) -> dict[str, Any]:
    subject = {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}
    return _bound(name, ns, kind, role, subject)


def _bound(name: str, ns: str | None, kind: str, role: str, subject: dict[str, str]) -> Any:
    meta: dict[str, Any] = {"name": name, **({"namespace": ns} if ns else {})}
    return {"metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [subject]}  # fmt: skip


async def fill(proc: base.Proc, names: list[str]) -> dict[str, str]:
    """The policy objects, the user's grant, and the benchmark's ConfigMaps (name -> rv)."""
    async with base.Api(proc) as api:
        namespaces = [base.NS_PUT] + [f"team-{i}" for i in range(NAMESPACES - 1)]
        for ns in namespaces:
            await api.namespace(ns)

        async def post(path: str, body: dict[str, Any]) -> None:
            status, out = await api.call("POST", path, body)
            assert status == 201, out

        jobs = []
        for i in range(ROLES):
            ns = namespaces[i % NAMESPACES]
            jobs.append(post(f"{RBAC_API}/namespaces/{ns}/roles", _role(f"r{i}", ns)))
            jobs.append(post(f"{RBAC_API}/namespaces/{ns}/rolebindings",
                             _binding(f"b{i}", ns, "Role", f"r{i}", f"user-{i}")))  # fmt: skip
        for i in range(CLUSTER_ROLES):
            cr = _role(f"cr{i}", "")
            del cr["metadata"]["namespace"]
            jobs.append(post(f"{RBAC_API}/clusterroles", cr))
            crb = _binding(f"cb{i}", None, "ClusterRole", f"cr{i}", f"op-{i}")
            jobs.append(post(f"{RBAC_API}/clusterrolebindings", crb))
        for start_at in range(0, len(jobs), 64):
            await asyncio.gather(*jobs[start_at : start_at + 64])
        await post(f"{RBAC_API}/namespaces/{base.NS_PUT}/roles", {
            "metadata": {"name": "bench"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "verbs": ["get", "list", "create", "update"]}],
        })  # fmt: skip
        await post(f"{RBAC_API}/namespaces/{base.NS_PUT}/rolebindings",
                   _bound("bench", base.NS_PUT, "Role", "bench", BENCH))  # fmt: skip
        await post(f"/api/v1/namespaces/{base.NS_PUT}/serviceaccounts",
                   {"metadata": {"name": "bench"}})  # fmt: skip
        return await api.create_many(base.NS_PUT, names, {"payload": base.PAYLOAD})


def decision_costs() -> dict[str, float]:
    """Microseconds per decision on an index holding the same policy as the servers: cached
    (what a repeated request costs) and uncached (the first request after any RBAC change)."""
    import timeit

    from kubelite.api.auth.rbacindex import PolicyIndex, RBACAuthorizer
    from kubelite.api.machinery.request import RequestInfo
    from kubelite.api.machinery.user import User

    index = PolicyIndex()
    namespaces = [base.NS_PUT] + [f"team-{i}" for i in range(NAMESPACES - 1)]
    for i in range(ROLES):
        ns = namespaces[i % NAMESPACES]
        index.put("roles", _role(f"r{i}", ns))
        index.put("rolebindings", _binding(f"b{i}", ns, "Role", f"r{i}", f"user-{i}"))
    for i in range(CLUSTER_ROLES):
        rules = _role("x", "")["rules"]
        index.put("clusterroles", {"metadata": {"name": f"cr{i}"}, "rules": rules})
        crb = _binding(f"cb{i}", None, "ClusterRole", f"cr{i}", f"op-{i}")
        index.put("clusterrolebindings", crb)
    index.put("roles", {"metadata": {"name": "bench", "namespace": base.NS_PUT}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update"]}]})  # fmt: skip
    index.put("rolebindings", _bound("bench", base.NS_PUT, "Role", "bench", BENCH))
    authorizer = RBACAuthorizer(index)
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{base.NS_PUT}")
    user = User(BENCH_USER, (*groups, "system:authenticated"))
    attrs = RequestInfo(f"/api/v1/namespaces/{base.NS_PUT}/configmaps/cas-0", "get", True, "api",
                        "", "v1", base.NS_PUT, "configmaps", "", "cas-0")  # fmt: skip
    assert authorizer.authorize(user, attrs).allowed
    n = 20000
    cached = timeit.timeit(lambda: authorizer.authorize(user, attrs), number=n) / n
    uncached = timeit.timeit(lambda: authorizer._decide(user, attrs), number=n) / n
    return {"cached_us": cached * 1e6, "uncached_us": uncached * 1e6}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dir", default=None, help="parent of the data dirs (a real disk)")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk not found: apt-get install -y wrk", file=sys.stderr)
        return 2
    seconds, rounds = (2, 2) if args.quick else (8, 4)
    base.pin(base.CLIENT_CPU)
    figures: dict[str, dict[str, list[float]]] = {}
    with base.workdir(args.dir) as parent:
        servers = {mode: start(parent, mode) for mode in ("RBAC", "AlwaysAllow")}
        try:
            names = [f"cas-{i}" for i in range(base.CONNECTIONS)]
            rvs = {mode: uvloop.run(fill(proc, names)) for mode, proc in servers.items()}
            tokens = {mode: uvloop.run(account_token(proc)) for mode, proc in servers.items()}
            cas, static = parent / "cas_put.lua", parent / "static.lua"
            cas.write_text(base.LUA_CAS_PUT)
            static.write_text(base.LUA_STATIC)
            obj = f"/api/v1/namespaces/{base.NS_PUT}/configmaps/cas-0"
            for mode, proc in servers.items():  # warm-up, and the user is allowed
                result = base.wrk(proc.url, static, 1, [tokens[mode], "GET", obj, ""])
                assert result.nother == 0, (mode, result)
                assert result.n2xx > 0, (mode, result)
                figures[mode] = {"put": [], "get": []}
            for rnd in range(rounds):
                base.log(f"round {rnd + 1}/{rounds}")
                for mode, proc in servers.items():
                    rv_file = parent / f"rvs-{mode}.txt"
                    put_args = base.cas_args(proc, names, rvs[mode], rv_file, tokens[mode])
                    put = base.wrk(proc.url, cas, seconds, put_args)
                    get = base.wrk(proc.url, static, seconds, [tokens[mode], "GET", obj, ""])
                    assert put.nother == 0, (mode, put)
                    assert get.nother == 0, (mode, get)
                    figures[mode]["put"].append(put.rate)
                    figures[mode]["get"].append(get.rate)
        finally:
            for proc in servers.values():
                proc.stop()
    med = {m: {k: statistics.median(v) for k, v in f.items()} for m, f in figures.items()}
    print(f"policy stored: {ROLES} Roles + {ROLES} RoleBindings in {NAMESPACES} namespaces, "
          f"{CLUSTER_ROLES} ClusterRoles + {CLUSTER_ROLES} ClusterRoleBindings")  # fmt: skip
    print(f"{'':14}{'RBAC':>10}{'AlwaysAllow':>14}{'ratio':>8}")
    for key, label in (("put", "PUT/s (CAS)"), ("get", "GET/s")):
        rbac, allow = med["RBAC"][key], med["AlwaysAllow"][key]
        print(f"{label:14}{rbac:>10,.0f}{allow:>14,.0f}{rbac / allow:>8.2f}")
    print(f"(medians of {rounds} alternating rounds of {seconds} s, "
          f"{base.CONNECTIONS} connections)")  # fmt: skip
    costs = decision_costs()
    print(f"one decision in process: {costs['cached_us']:.2f} us cached, "
          f"{costs['uncached_us']:.2f} us uncached (after any RBAC change)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
