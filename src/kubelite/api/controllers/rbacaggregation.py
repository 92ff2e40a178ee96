"""The ClusterRole aggregation controller: keeps the rules of every ClusterRole that has an
``aggregationRule`` equal to the union of the roles its selectors pick (what
kube-controller-manager's ``clusterrole-aggregation`` controller does,
pkg/controller/clusterroleaggregation). Without it ``admin``, ``edit`` and ``view`` grant nothing.

An aggregated role's rules are, for each of its ``clusterRoleSelectors`` in order, the rules of
every ClusterRole the selector matches (label selector semantics, ``matchExpressions``
included), sorted by name, the role itself left out, each rule appended unless an equal one is
already there (equal as Go's semantic equality: an empty list is an absent one).

It is a controller like any client's: a watch on ClusterRoles (through the registry's storage)
wakes it; any add, update or delete re-evaluates every aggregated role, from a fresh list. A
burst of changes is one pass: the watch only flags that work is due, and a pass starts
``debounce_seconds`` after the first flag. Within a pass the aggregated roles are computed to a
fixed point before anything is written (``view`` feeds ``edit``, which feeds ``admin``), so
each role is written once.

A role whose rules differ is written as kube writes it: a server-side apply by the manager
``clusterrole-aggregation-controller`` with force, of ``rules`` only (managedFields then show
``{"f:rules":{}}``), carrying the observed role's uid so that a role deleted meanwhile is not
created again. When apply is not served (415), or when the result still differs (another
manager co-owns ``rules``, so an emptied list was kept), it falls back to a conflict-checked
update of ``rules``, as kube's ``updateClusterRoles``. A 409 or 404 (the role changed or went
meanwhile) makes the next pass look again; failed passes are retried with exponential
back-off.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kubelite.api import errors
from kubelite.api.auth.rbac import rules_of
from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.passes import PassController
from kubelite.api.encoding.stored import clone_value
from kubelite.api.errors import APIError
from kubelite.api.kinds.rbac.policy import API_VERSION, GROUP
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import SelectorError, label_selector_of

#: The field manager of its writes (kube's).
MANAGER = "clusterrole-aggregation-controller"
RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Rule = tuple[tuple[str, tuple[Any, ...]], ...]


class ClusterRoleAggregator(PassController):
    """``start()`` runs the controller as tasks on the running loop; ``close()`` stops them.
    ``wait_idle()`` (for tests) returns once a pass begun after the call found every
    aggregated role current."""

    name = "clusterrole aggregation controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        debounce_seconds: float = 0.02,
        retry_min_seconds: float = 0.05,
        retry_max_seconds: float = 2.0,
    ) -> None:
        super().__init__(
            registry,
            catalogue.require(GROUP, "v1", "clusterroles"),
            debounce_seconds=debounce_seconds,
            retry_min_seconds=retry_min_seconds,
            retry_max_seconds=retry_max_seconds,
        )

    # -- one pass --------------------------------------------------------------------------------

    async def run_pass(self) -> tuple[bool, bool]:
        """Bring every aggregated role up to date: (wrote anything, some need another look)."""
        listing = await self.registry.list(self.info, None)
        roles = sorted(listing.get("items") or [], key=lambda r: r["metadata"]["name"])
        desired = aggregate_all(roles)
        wrote = pending = False
        for role in roles:
            name = role["metadata"]["name"]
            if name not in desired or same_rules(desired[name], rules_of(role)):
                continue
            try:
                await self._write(role, desired[name])
            except APIError as exc:
                if exc.code not in (404, 409):
                    raise
                pending = True  # changed or gone meanwhile: the watch brings it back
                continue
            wrote = True
        return wrote, pending

    async def _write(self, role: Obj, rules: list[Obj]) -> None:
        meta = role["metadata"]
        name = meta["name"]
        config: Obj = {
            "apiVersion": API_VERSION,
            "kind": "ClusterRole",
            "metadata": {"name": name, "uid": meta.get("uid", "")},
        }
        if rules:  # an empty list is left out, as client-go's apply configuration does
            config["rules"] = rules
        try:
            written, _ = await self.registry.apply(
                self.info, None, name, config, field_manager=MANAGER, force=True
            )
        except APIError as exc:
            if exc.code != 415:
                raise
            written = role
        if not same_rules(rules, rules_of(written)):
            await self._update(name, meta.get("uid", ""), rules)

    async def _update(self, name: str, uid: str, rules: list[Obj]) -> None:
        """updateClusterRoles: the stored role with ``rules`` replaced, conflict-checked."""
        info = self.info

        def with_rules(role: Obj) -> None:
            if uid and role["metadata"].get("uid") != uid:
                raise errors.conflict(info.plural, info.group, name)
            role["rules"] = clone_value(rules)

        await self.registry.mutate(info, None, name, with_rules, field_manager=MANAGER)


# -- the aggregation ---------------------------------------------------------------------------


def _rule_key(rule: Obj) -> Rule:
    """A rule for comparison: its fields that are set (Go's semantic equality)."""
    return tuple(
        (f, tuple(rule[f])) for f in RULE_FIELDS if isinstance(rule.get(f), list) and rule[f]
    )


def _as_applied(rule: Obj) -> Obj:
    """A rule as the apply configuration carries it (empty lists left out)."""
    return {f: list(rule[f]) for f in RULE_FIELDS if isinstance(rule.get(f), list) and rule[f]}


def same_rules(a: Iterable[Obj], b: Iterable[Obj]) -> bool:
    return [_rule_key(r) for r in a] == [_rule_key(r) for r in b]


def selectors_of(role: Obj) -> list[Obj] | None:
    """The role's ``clusterRoleSelectors``, or None when it has no aggregationRule."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, dict):
        return None
    selectors = rule.get("clusterRoleSelectors")
    return [s for s in selectors if isinstance(s, dict)] if isinstance(selectors, list) else []


def aggregate(role: Obj, roles: list[Obj], rules: dict[str, list[Obj]]) -> list[Obj]:
    """``role``'s rules from ``roles`` (sorted by name); ``rules`` overrides a role's own."""
    name = role["metadata"]["name"]
    out: list[Obj] = []
    seen: set[Rule] = set()
    for selector in selectors_of(role) or []:
        matcher = label_selector_of(selector)
        for other in roles:
            other_name = other["metadata"]["name"]
            labels = other["metadata"].get("labels")
            labels = labels if isinstance(labels, dict) else {}  # another shape: no labels
            if other_name == name or not matcher.matches(labels):
                continue
            for rule in rules.get(other_name, rules_of(other)):
                key = _rule_key(rule)
                if key not in seen:
                    seen.add(key)
                    out.append(_as_applied(rule))
    return out


def aggregate_all(roles: list[Obj]) -> dict[str, list[Obj]]:
    """The rules every aggregated role of ``roles`` (sorted by name) should have, computed to a
    fixed point (an aggregated role may select another); a role whose selector is invalid is
    left out (kube's controller errs on it)."""
    aggregated = [r for r in roles if selectors_of(r) is not None]
    rules: dict[str, list[Obj]] = {r["metadata"]["name"]: rules_of(r) for r in aggregated}
    broken: set[str] = set()
    for _ in range(len(aggregated) + 1):
        changed = False
        for role in aggregated:
            name = role["metadata"]["name"]
            try:
                new = aggregate(role, roles, rules)
            except SelectorError as exc:
                if name not in broken:
                    log.warning("clusterrole aggregation: %s: %s", name, exc)
                broken.add(name)
                continue
            if not same_rules(new, rules[name]):
                rules[name] = new
                changed = True
        if not changed:
            break
    return {name: r for name, r in rules.items() if name not in broken}
