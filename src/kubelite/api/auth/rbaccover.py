"""Whether one set of RBAC rules covers another, and the text kube-apiserver writes when it does
not: the escalation check a write of a Role, ClusterRole or binding must pass (kubernetes
``pkg/registry/rbac/escalation_check.go``), as pure functions over PolicyRule objects
(``verbs``, ``apiGroups``, ``resources``, ``resourceNames``, ``nonResourceURLs``).

A requested rule is broken into atoms of one verb and one group, resource and resource name (or
one non-resource URL); each atom must be covered by one rule the user holds. The atoms left
uncovered are compacted (atoms differing only by verb merged into one rule) and printed one per
line, sorted, in Go's ``%q`` form.

Sources: kubernetes/component-helpers ``auth/rbac/validation/policy_comparator.go`` (``Covers``,
``BreakdownRule``), kubernetes ``pkg/registry/rbac/validation/policy_compact.go``
(``CompactRules``), ``pkg/apis/rbac/v1/evaluation_helpers.go`` (``CompactString``),
``pkg/registry/rbac/validation/rule.go`` (``ConfirmNoEscalation``) and apimachinery
``pkg/util/errors`` (an aggregate's text).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kubelite.api.auth.rbac import strings
from kubelite.api.errors import go_quote
from kubelite.api.machinery.user import User

Obj = dict[str, Any]

VERBS, GROUPS, RESOURCES, NAMES, URLS = (
    "verbs",
    "apiGroups",
    "resources",
    "resourceNames",
    "nonResourceURLs",
)

#: ``*`` on everything: what setting a ClusterRole's aggregationRule takes.
FULL_AUTHORITY: tuple[Obj, ...] = (
    {VERBS: ["*"], GROUPS: ["*"], RESOURCES: ["*"]},
    {VERBS: ["*"], URLS: ["*"]},
)


# -- coverage ------------------------------------------------------------------------------------


def breakdown(rule: Obj) -> list[Obj]:
    """``BreakdownRule``: the atoms of ``rule``, each with one verb and one group, resource and
    resource name (none when the rule names none), then one per (URL, verb)."""
    verbs, names = strings(rule, VERBS), strings(rule, NAMES)
    atoms: list[Obj] = []
    for group in strings(rule, GROUPS):
        for resource in strings(rule, RESOURCES):
            for verb in verbs:
                base = {GROUPS: [group], RESOURCES: [resource], VERBS: [verb]}
                if names:
                    atoms += [{**base, NAMES: [name]} for name in names]
                else:
                    atoms.append(base)
    for url in strings(rule, URLS):
        atoms += [{URLS: [url], VERBS: [verb]} for verb in verbs]
    return atoms


def covers(owner: Sequence[Obj], servant: Iterable[Obj]) -> tuple[bool, list[Obj]]:
    """``Covers``: whether the rules ``owner`` holds cover every rule of ``servant``, and the
    atoms of ``servant`` they do not cover, in order."""
    uncovered = [
        atom
        for rule in servant
        for atom in breakdown(rule)
        if not any(rule_covers(held, atom) for held in owner)
    ]
    return not uncovered, uncovered


def rule_covers(owner: Obj, atom: Obj) -> bool:
    """``ruleCovers``: one held rule covers one atom (verbs, groups, resources, resource names
    and URLs all covered)."""
    verbs, groups = strings(owner, VERBS), strings(owner, GROUPS)
    if "*" not in verbs and not set(strings(atom, VERBS)) <= set(verbs):
        return False
    if "*" not in groups and not set(strings(atom, GROUPS)) <= set(groups):
        return False
    if not _resources_cover(strings(owner, RESOURCES), strings(atom, RESOURCES)):
        return False
    if not all(
        any(_url_covers(held, url) for held in strings(owner, URLS)) for url in strings(atom, URLS)
    ):
        return False
    held_names, names = strings(owner, NAMES), strings(atom, NAMES)
    if not names:
        return not held_names
    return not held_names or set(names) <= set(held_names)


def _resources_cover(held: list[str], wanted: list[str]) -> bool:
    """``*``, the exact resource, or ``*/<sub>`` for a ``<resource>/<sub>``."""
    if "*" in held:
        return True
    for resource in wanted:
        if resource in held:
            continue
        if "/" not in resource:
            return False
        if "*/" + resource.split("/", 1)[1] not in held:
            return False
    return True


def _url_covers(held: str, url: str) -> bool:
    return held == url or (held.endswith("*") and url.startswith(held.rstrip("*")))


# -- the failure text ------------------------------------------------------------------------


def compact(rules: Iterable[Obj]) -> list[Obj]:
    """``CompactRules``: rules of one group and one resource (at most one resource name, no
    URLs) differing only by verb become one rule with the verbs in order; the others stay."""
    compacted: list[Obj] = []
    simple: dict[tuple[str, str, str | None], Obj] = {}
    for rule in rules:
        key = _simple_key(rule)
        if key is None:
            compacted.append(rule)
        elif key in simple:
            simple[key][VERBS] += strings(rule, VERBS)
        else:
            group, resource, name = key
            merged: Obj = {GROUPS: [group], RESOURCES: [resource], VERBS: strings(rule, VERBS)}
            if name is not None:
                merged[NAMES] = [name]
            simple[key] = merged
    return compacted + list(simple.values())


def _simple_key(rule: Obj) -> tuple[str, str, str | None] | None:
    groups, resources, names = strings(rule, GROUPS), strings(rule, RESOURCES), strings(rule, NAMES)
    if len(names) > 1 or strings(rule, URLS) or len(groups) != 1 or len(resources) != 1:
        return None
    if set(rule) - {VERBS, GROUPS, RESOURCES, NAMES}:
        return None
    return groups[0], resources[0], names[0] if names else None


def compact_string(rule: Obj) -> str:
    """``CompactString``: ``{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}``,
    the parts present only when not empty."""
    parts = []
    for label, key in (
        ("APIGroups", GROUPS),
        ("Resources", RESOURCES),
        ("NonResourceURLs", URLS),
        ("ResourceNames", NAMES),
        ("Verbs", VERBS),
    ):
        values = strings(rule, key)
        if values:
            parts.append(f"{label}:{go_strings(values)}")
    return "{" + ", ".join(parts) + "}"


def go_strings(values: Iterable[str]) -> str:
    """Go's ``%q`` of a string slice: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def aggregate(errors: Sequence[str]) -> str:
    """The text of apimachinery's error aggregate: one error as it is, several (repeats
    dropped) joined by ``, `` in brackets."""
    if len(errors) == 1:
        return errors[0]
    distinct = list(dict.fromkeys(errors))
    if len(distinct) == 1:
        return distinct[0]
    return "[" + ", ".join(distinct) + "]"


def escalation(user: User, held: Sequence[Obj], errors: Sequence[str], rules: Iterable[Obj]) -> str:
    """``ConfirmNoEscalation``: "" when the rules ``user`` holds (``held``, resolved with
    ``errors``) cover ``rules``, else why not: the rules missing, compacted, one per line,
    sorted; and the resolution errors when there were some."""
    covered, missing = covers(held, rules)
    if covered:
        return ""
    lines = sorted({compact_string(rule) for rule in compact(missing)})
    message = (
        f"user {go_quote(user.name)} (groups={go_strings(user.groups)}) is attempting to grant "
        "RBAC permissions not currently held:\n" + "\n".join(lines)
    )
    if errors:
        message += f"; resolution errors: [{aggregate(errors)}]"
    return message
