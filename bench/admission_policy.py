"""What a ValidatingAdmissionPolicy costs a write: conflict-checked PUT/s of ConfigMaps on a
server with one policy (and its binding) matching every ConfigMap write, against a server with
none.

The policy is a typical one: a variable, two validations (one with a messageExpression) and a
namespace selector on the binding, so each PUT reads the namespace, builds the CEL activation
and evaluates three expressions. Both servers run side by side (pinned to CPU 0, wrk to CPU 1)
and are measured in alternating rounds with the same wrk script as ``bench/api.py``
(conflict-checked PUTs of 64 ConfigMaps of ~2 KB).

Run:
    .venv/bin/python bench/admission_policy.py            # ~1.5 min
    .venv/bin/python bench/admission_policy.py --quick    # smoke run, ~30 s
"""

from __future__ import annotations

import argparse
import copy
import shutil
import statistics
import sys
import timeit
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api as base

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
POLICY = {
    "metadata": {"name": "configmap-size"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["configmaps"],
                }
            ]
        },
        "variables": [{"name": "payload", "expression": "object.data.payload"}],
        "validations": [
            {
                "expression": "size(variables.payload) < 4096",
                "messageExpression": "'payload of ' + string(size(variables.payload))",
            },
            {"expression": "!('forbidden' in object.data)", "reason": "Forbidden"},
        ],
    },
}
BINDING = {
    "metadata": {"name": "configmap-size"},
    "spec": {
        "policyName": "configmap-size",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"bench": "yes"}}},
    },
}


def start(parent: Path, name: str) -> base.Proc:
    proc = base.start_kubelite(parent / name / "data")
    base.wait_ready(proc)
    return proc


async def fill(proc: base.Proc, names: list[str], with_policy: bool) -> dict[str, str]:
    """The namespace (labelled for the binding), the policy if any, and the ConfigMaps."""
    async with base.Api(proc) as api:
        body = {"metadata": {"name": base.NS_PUT, "labels": {"bench": "yes"}}}
        status, out = await api.call("POST", "/api/v1/namespaces", body)
        assert status == 201, out
        if with_policy:
            for path, obj in (("validatingadmissionpolicies", POLICY),
                              ("validatingadmissionpolicybindings", BINDING)):  # fmt: skip
                status, out = await api.call("POST", f"{ADMISSION}/{path}", obj)
                assert status == 201, out
            # the policy is in force: a write it refuses
            bad = base.cm(base.NS_PUT, "bad", {"payload": "x", "forbidden": "y"})
            status, out = await api.call(
                "POST", f"/api/v1/namespaces/{base.NS_PUT}/configmaps", bad
            )
            assert status == 403, out
        return await api.create_many(base.NS_PUT, names, {"payload": base.PAYLOAD})


def validate_cost() -> float:
    """Microseconds per plugin call for one matching policy, in process (the namespaces read
    from memory, as the server's mirror holds them)."""
    from kubelite.api.admission.policy import PolicySet, ValidatingPolicyAdmission, compile_policy
    from kubelite.api.admission.policy.source import NamespaceMirror
    from kubelite.api.catalogue import load_builtin_catalogue
    from kubelite.api.kinds import new_registry
    from kubelite.api.kinds.admissionregistration.defaults import (
        default_validating_admission_policy,
        default_validating_admission_policy_binding,
    )
    from kubelite.api.machinery.admission import UPDATE, Attributes
    from kubelite.api.machinery.user import ADMIN
    from kubelite.storage import StoreOptions, open_store

    async def run() -> float:
        store = await open_store("sqlite://", StoreOptions(compaction_interval_seconds=0))
        catalogue = load_builtin_catalogue()
        registry = new_registry(store, catalogue)
        namespaces = catalogue.require("", "v1", "namespaces")
        await registry.create(
            namespaces, None, {"metadata": {"name": "ns", "labels": {"bench": "yes"}}}
        )
        policies: PolicySet[Any] = PolicySet(compile_policy)
        policy, binding = copy.deepcopy(POLICY), copy.deepcopy(BINDING)
        default_validating_admission_policy(policy)  # as the server stores them
        default_validating_admission_policy_binding(binding)
        policies.put_policy(policy)
        policies.put_binding(binding)
        mirror = NamespaceMirror(registry, namespaces)
        await mirror.mirror.start()
        plugin = ValidatingPolicyAdmission(registry, catalogue, policies, lambda: None, mirror.get)
        info = catalogue.require("", "v1", "configmaps")
        obj = await registry.create(info, "ns", base.cm("ns", "c", {"payload": base.PAYLOAD}))
        attrs = Attributes(UPDATE, info, "ns", "c", obj, obj, ADMIN)
        n = 2000
        for _ in range(100):
            await plugin.validate(attrs)
        started = timeit.default_timer()
        for _ in range(n):
            await plugin.validate(attrs)
        elapsed = timeit.default_timer() - started
        await mirror.mirror.close()
        await store.close()
        return elapsed / n * 1e6

    return uvloop.run(run())


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
    figures: dict[str, list[float]] = {}
    with base.workdir(args.dir) as parent:
        servers = {name: start(parent, name) for name in ("policy", "none")}
        try:
            names = [f"cas-{i}" for i in range(base.CONNECTIONS)]
            rvs = {
                name: uvloop.run(fill(proc, names, name == "policy"))
                for name, proc in servers.items()
            }
            cas = parent / "cas_put.lua"
            cas.write_text(base.LUA_CAS_PUT)
            for name in servers:
                figures[name] = []
            for rnd in range(rounds):
                base.log(f"round {rnd + 1}/{rounds}")
                for name, proc in servers.items():
                    rv_file = parent / f"rvs-{name}.txt"
                    put_args = base.cas_args(proc, names, rvs[name], rv_file)
                    put = base.wrk(proc.url, cas, seconds, put_args)
                    assert put.nother == 0, (name, put)
                    figures[name].append(put.rate)
        finally:
            for proc in servers.values():
                proc.stop()
    med = {name: statistics.median(values) for name, values in figures.items()}
    print(f"{'':24}{'one policy':>12}{'none':>10}{'ratio':>8}")
    policy, none = med["policy"], med["none"]
    print(f"{'PUT/s (CAS, ConfigMaps)':24}{policy:>12,.0f}{none:>10,.0f}{policy / none:>8.2f}")
    if policy and none:
        added = (1 / policy - 1 / none) * 1e6
        print(f"added per PUT at saturation: {added:.0f} us of the server's CPU")
    print(
        f"(medians of {rounds} alternating rounds of {seconds} s, {base.CONNECTIONS} connections)"
    )
    print(
        f"one plugin call in process: {validate_cost():.0f} us (match, activation, 3 expressions)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
