"""Validation: FlowSchema and PriorityLevelConfiguration (pkg/apis/flowcontrol/validation).

The internal flowcontrol types have no JSON tags, so a whole spec in an error (a mandatory
object changed) prints with Go's field names, as kube prints it.
"""

from __future__ import annotations

import copy
from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.flowcontrol.bootstrap import mandatory_spec
from kubelite.api.kinds.flowcontrol.defaults import default_flow_schema, default_priority_level
from kubelite.api.kinds.validation.fields import (
    Obj,
    Struct,
    Typed,
    as_dict,
    as_int,
    as_list,
    as_str,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from kubelite.api.machinery.names import label_errors, subdomain_errors
from kubelite.api.shufflesharding import MAX_HASH_BITS, required_entropy_bits

MAX_PRECEDENCE = 10000
MAX_QUEUES = 10 * 1000 * 1000
SUPPORTED_VERBS = sorted(
    ["get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy"]
)
NS_INTRO = "each member of this list must be '*' or a DNS-1123 label; "


def _has_wildcard(values: list[Any]) -> bool:
    return "*" in values


def _verbs(rule: Obj, path: str) -> list[Cause]:
    verbs = as_list(rule.get("verbs"))
    if not verbs:
        return [required(f"{path}.verbs", "verbs must contain at least one value")]
    if _has_wildcard(verbs):
        if len(verbs) > 1:
            return [
                invalid(f"{path}.verbs", verbs, "if '*' is present, must not specify other verbs")
            ]
        return []
    if not set(verbs) <= set(SUPPORTED_VERBS):
        return [not_supported(f"{path}.verbs", verbs, SUPPORTED_VERBS)]
    return []


def _url_path_cause(url: Any, path: str) -> Cause | None:
    """ValidateNonResourceURLPath."""
    text = as_str(url)
    if not text:
        return invalid(path, text, "must not be empty")
    if text == "/":
        return None
    if not text.startswith("/"):
        return invalid(path, text, "must start with slash")
    if " " in text:
        return invalid(path, text, "must not contain white-space")
    if "//" in text:
        return invalid(path, text, "must not contain double slash")
    wildcards = text.count("*")
    if wildcards > 1 or (wildcards == 1 and text[-2:] != "/*"):
        return invalid(path, text, "wildcard can only do suffix matching")
    return None


def _non_resource_rule(rule: Obj, path: str) -> list[Cause]:
    causes = _verbs(rule, path)
    urls = as_list(rule.get("nonResourceURLs"))
    if not urls:
        causes.append(
            required(f"{path}.nonResourceURLs", "nonResourceURLs must contain at least one value")
        )
    elif _has_wildcard(urls):
        if len(urls) > 1:
            causes.append(
                invalid(
                    f"{path}.nonResourceURLs",
                    urls,
                    "if '*' is present, must not specify other non-resource URLs",
                )
            )
    else:
        for i, url in enumerate(urls):
            cause = _url_path_cause(url, f"{path}.nonResourceURLs[{i}]")
            if cause is not None:
                causes.append(cause)
    return causes


def _resource_rule(rule: Obj, path: str) -> list[Cause]:
    causes = _verbs(rule, path)
    for key, noun in (("apiGroups", "api group"), ("resources", "resource")):
        values = as_list(rule.get(key))
        if not values:
            causes.append(
                required(f"{path}.{key}", f"resource rules must supply at least one {noun}")
            )
        elif len(values) > 1 and _has_wildcard(values):
            causes.append(
                invalid(
                    f"{path}.{key}", values, f"if '*' is present, must not specify other {noun}s"
                )
            )
    namespaces = as_list(rule.get("namespaces"))
    if not namespaces and not rule.get("clusterScope"):
        causes.append(
            required(
                f"{path}.namespaces",
                "resource rules that are not cluster scoped must supply at least one namespace",
            )
        )
    elif _has_wildcard(namespaces):
        if len(namespaces) > 1:
            causes.append(
                invalid(
                    f"{path}.namespaces",
                    namespaces,
                    "if '*' is present, must not specify other namespaces",
                )
            )
    else:
        for i, namespace in enumerate(namespaces):
            for message in label_errors(as_str(namespace)):
                causes.append(invalid(f"{path}.namespaces[{i}]", namespace, NS_INTRO + message))
    return causes  # fmt: skip


def _subject(subject: Obj, path: str) -> list[Cause]:
    """ValidateFlowSchemaSubject."""
    kind = subject.get("kind")
    members = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}
    if kind not in members:
        return [not_supported(f"{path}.kind", Typed(as_str(kind)), sorted(members))]
    member = members[kind]
    causes: list[Cause] = []
    value = subject.get(member)
    if value is None:
        causes.append(
            required(f"{path}.{member}", f"{member} is required when subject kind is '{kind}'")
        )
    elif kind == "ServiceAccount":
        account = as_dict(value)
        name = as_str(account.get("name"))
        if not name:
            causes.append(required(f"{path}.serviceAccount.name"))
        elif name != "*":
            for message in subdomain_errors(name):
                causes.append(invalid(f"{path}.serviceAccount.name", name, message))
        namespace = as_str(account.get("namespace"))
        if namespace:
            for message in label_errors(namespace):
                causes.append(invalid(f"{path}.serviceAccount.namespace", namespace, message))
        else:
            causes.append(
                required(
                    f"{path}.serviceAccount.namespace", "must specify namespace for service account"
                )
            )
    elif not as_str(as_dict(value).get("name")):
        causes.append(required(f"{path}.{member}.name"))
    for other, other_kind in (
        ("user", "User"),
        ("group", "Group"),
        ("serviceAccount", "ServiceAccount"),
    ):
        if other != member and subject.get(other) is not None:
            causes.append(
                forbidden(
                    f"{path}.{other}",
                    f"{other} is forbidden when subject kind is not '{other_kind}'",
                )
            )
    return causes  # fmt: skip


def _conditions(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, condition in enumerate(as_list(as_dict(obj.get("status")).get("conditions"))):
        kind = as_str(as_dict(condition).get("type"))
        path = f"status.conditions[{i}].type"
        if kind in seen:
            causes.append(duplicate(path, Typed(kind)))
        seen.add(kind)
        if not kind:
            causes.append(required(path, "must not be empty"))
    return causes


def validate_flow_schema(obj: Obj, old: Obj | None) -> list[Cause]:
    """ValidateFlowSchema (and its update, which is the same)."""
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    precedence = as_int(spec.get("matchingPrecedence")) or 0
    if precedence <= 0:
        causes.append(invalid("spec.matchingPrecedence", precedence, "must be a positive value"))
    if precedence > MAX_PRECEDENCE:
        causes.append(
            invalid(
                "spec.matchingPrecedence", precedence, f"must not be greater than {MAX_PRECEDENCE}"
            )
        )
    if precedence == 1 and name != "exempt":
        causes.append(
            invalid(
                "spec.matchingPrecedence",
                precedence,
                "only the schema named 'exempt' may have matchingPrecedence 1",
            )
        )
    method = spec.get("distinguisherMethod")
    if method is not None and as_dict(method).get("type") not in ("ByNamespace", "ByUser"):
        causes.append(
            not_supported(
                "spec.distinguisherMethod.type",
                Struct(Type=as_str(as_dict(method).get("type"))),
                ["ByNamespace", "ByUser"],
            )
        )
    level = as_str(as_dict(spec.get("priorityLevelConfiguration")).get("name"))
    if level:
        for message in subdomain_errors(level):
            causes.append(invalid("spec.priorityLevelConfiguration.name", level, message))
    else:
        causes.append(
            required("spec.priorityLevelConfiguration.name", "must reference a priority level")
        )
    for i, rule in enumerate(as_list(spec.get("rules"))):
        rule, path = as_dict(rule), f"spec.rules[{i}]"
        subjects = as_list(rule.get("subjects"))
        if not subjects:
            causes.append(required(f"{path}.subjects", "subjects must contain at least one value"))
        for j, subject in enumerate(subjects):
            causes += _subject(as_dict(subject), f"{path}.subjects[{j}]")
        resources = as_list(rule.get("resourceRules"))
        non_resources = as_list(rule.get("nonResourceRules"))
        if not resources and not non_resources:
            causes.append(
                required(
                    path, "at least one of resourceRules and nonResourceRules has to be non-empty"
                )
            )
        for j, r in enumerate(resources):
            causes += _resource_rule(as_dict(r), f"{path}.resourceRules[{j}]")
        for j, r in enumerate(non_resources):
            causes += _non_resource_rule(as_dict(r), f"{path}.nonResourceRules[{j}]")
    fixed = _mandatory("FlowSchema", name, default_flow_schema)
    if fixed is not None and spec != fixed:
        causes.append(
            invalid(
                "spec", _go_flow_schema_spec(spec), f"spec of '{name}' must equal the fixed value"
            )
        )
    return causes + _conditions(obj)  # fmt: skip


def _mandatory(kind: str, name: str, default: Any) -> Obj | None:
    """A mandatory object's fixed spec, defaulted as a stored one is."""
    spec = mandatory_spec(kind, name)
    if spec is None:
        return None
    obj = {"spec": copy.deepcopy(spec)}
    default(obj)
    fixed: Obj = obj["spec"]
    return fixed


def _percent(value: Any, path: str) -> list[Cause]:
    number = as_int(value)
    if number is not None and not 0 <= number <= 100:
        return [invalid(path, number, "must be between 0 and 100, inclusive")]
    return []


def _nonnegative_shares(value: Any, path: str) -> list[Cause]:
    number = as_int(value)
    if number is not None and number < 0:
        return [invalid(path, number, "must be a non-negative integer")]
    return []


def _limited(limited: Obj, path: str) -> list[Cause]:
    causes = _nonnegative_shares(
        limited.get("nominalConcurrencyShares"), f"{path}.nominalConcurrencyShares"
    )
    response, rpath = as_dict(limited.get("limitResponse")), f"{path}.limitResponse"
    kind, queuing = response.get("type"), response.get("queuing")
    if kind == "Reject":
        if queuing is not None:
            causes.append(
                forbidden(
                    f"{rpath}.queuing", "must be nil if limited.limitResponse.type is not Limited"
                )
            )
    elif kind == "Queue":
        if queuing is None:
            causes.append(
                required(
                    f"{rpath}.queuing", "must not be empty if limited.limitResponse.type is Limited"
                )
            )
        else:
            causes += _queuing(as_dict(queuing), f"{rpath}.queuing")
    else:
        causes.append(not_supported(f"{rpath}.type", Typed(as_str(kind)), ["Queue", "Reject"]))
    causes += _percent(limited.get("lendablePercent"), f"{path}.lendablePercent")
    borrowing = as_int(limited.get("borrowingLimitPercent"))
    if borrowing is not None and borrowing < 0:
        causes.append(
            invalid(
                f"{path}.borrowingLimitPercent",
                borrowing,
                "if specified, must be a non-negative integer",
            )
        )
    return causes  # fmt: skip


def _queuing(queuing: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    length = as_int(queuing.get("queueLengthLimit")) or 0
    if length <= 0:
        causes.append(invalid(f"{path}.queueLengthLimit", length, "must be positive"))
    queues = as_int(queuing.get("queues")) or 0
    if queues <= 0:
        causes.append(invalid(f"{path}.queues", queues, "must be positive"))
    elif queues > MAX_QUEUES:
        causes.append(invalid(f"{path}.queues", queues, f"must not be greater than {MAX_QUEUES}"))
    hand = as_int(queuing.get("handSize")) or 0
    if hand <= 0:
        causes.append(invalid(f"{path}.handSize", hand, "must be positive"))
    elif hand > queues:
        causes.append(
            invalid(f"{path}.handSize", hand, f"should not be greater than queues ({queues})")
        )
    elif required_entropy_bits(queues, hand) > MAX_HASH_BITS:
        causes.append(
            invalid(
                f"{path}.handSize",
                hand,
                f"required entropy bits of deckSize {queues} and handSize {hand} "
                f"should not be greater than {MAX_HASH_BITS}",
            )
        )
    return causes  # fmt: skip


def validate_priority_level(obj: Obj, old: Obj | None) -> list[Cause]:
    """ValidatePriorityLevelConfiguration (and its update, which is the same)."""
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    spec = as_dict(obj.get("spec"))
    kind = spec.get("type")
    causes: list[Cause] = []
    if (name == "exempt") != (kind == "Exempt"):
        causes.append(
            invalid(
                "spec.type",
                Typed(as_str(kind)),
                "type must be 'Exempt' if and only if name is 'exempt'",
            )
        )
    if kind == "Exempt":
        if spec.get("limited") is not None:
            causes.append(forbidden("spec.limited", "must be nil if the type is not Limited"))
        exempt = as_dict(spec.get("exempt"))
        causes += _nonnegative_shares(
            exempt.get("nominalConcurrencyShares"), "spec.exempt.nominalConcurrencyShares"
        )
        causes += _percent(exempt.get("lendablePercent"), "spec.exempt.lendablePercent")
    elif kind == "Limited":
        if spec.get("exempt") is not None:
            causes.append(forbidden("spec.exempt", "must be nil if the type is Limited"))
        if spec.get("limited") is None:
            causes.append(required("spec.limited", "must not be empty when type is Limited"))
        else:
            causes += _limited(as_dict(spec.get("limited")), "spec.limited")
    else:
        causes.append(not_supported("spec.type", Typed(as_str(kind)), ["Exempt", "Limited"]))
    fixed = _mandatory("PriorityLevelConfiguration", name, default_priority_level)
    if fixed is not None:
        if name == "exempt":
            if {**spec, "exempt": None} != {**fixed, "exempt": None}:
                causes.append(
                    invalid(
                        "spec",
                        _go_level_spec(spec),
                        "spec of 'exempt' except the 'spec.exempt' field must equal "
                        "the fixed value",
                    )
                )
        elif spec != fixed:
            causes.append(
                invalid(
                    "spec", _go_level_spec(spec), f"spec of '{name}' must equal the fixed value"
                )
            )
    return causes + _conditions(obj)  # fmt: skip


# -- a spec as kube prints its internal (untagged) Go value ---------------------------------------


def _ptr(value: Any, build: Any) -> Any:
    return None if value is None else build(as_dict(value))


def _strings(value: Any) -> list[Any] | None:
    values = as_list(value)
    return values if value is not None else None


def _go_flow_schema_spec(spec: Obj) -> Struct:
    def subject(s: Obj) -> Struct:
        return Struct(
            Kind=s.get("kind", ""),
            User=_ptr(s.get("user"), lambda u: Struct(Name=u.get("name", ""))),
            Group=_ptr(s.get("group"), lambda g: Struct(Name=g.get("name", ""))),
            ServiceAccount=_ptr(
                s.get("serviceAccount"),
                lambda a: Struct(Namespace=a.get("namespace", ""), Name=a.get("name", "")),
            ),
        )

    def rule(r: Obj) -> Struct:
        return Struct(
            Subjects=[subject(as_dict(s)) for s in as_list(r.get("subjects"))] or None,
            ResourceRules=[
                Struct(
                    Verbs=_strings(x.get("verbs")),
                    APIGroups=_strings(x.get("apiGroups")),
                    Resources=_strings(x.get("resources")),
                    ClusterScope=bool(x.get("clusterScope")),
                    Namespaces=_strings(x.get("namespaces")),
                )
                for x in map(as_dict, as_list(r.get("resourceRules")))
            ]
            or None,
            NonResourceRules=[
                Struct(
                    Verbs=_strings(x.get("verbs")),
                    NonResourceURLs=_strings(x.get("nonResourceURLs")),
                )
                for x in map(as_dict, as_list(r.get("nonResourceRules")))
            ]
            or None,
        )

    return Struct(
        PriorityLevelConfiguration=Struct(
            Name=as_dict(spec.get("priorityLevelConfiguration")).get("name", "")
        ),
        MatchingPrecedence=spec.get("matchingPrecedence", 0),
        DistinguisherMethod=_ptr(spec.get("distinguisherMethod"),
                                 lambda m: Struct(Type=m.get("type", ""))),
        Rules=[rule(as_dict(r)) for r in as_list(spec.get("rules"))] or None,
    )  # fmt: skip


def _go_level_spec(spec: Obj) -> Struct:
    def limited(x: Obj) -> Struct:
        response = as_dict(x.get("limitResponse"))
        return Struct(
            NominalConcurrencyShares=x.get("nominalConcurrencyShares", 0),
            LimitResponse=Struct(
                Type=response.get("type", ""),
                Queuing=_ptr(
                    response.get("queuing"),
                    lambda q: Struct(
                        Queues=q.get("queues", 0),
                        HandSize=q.get("handSize", 0),
                        QueueLengthLimit=q.get("queueLengthLimit", 0),
                    ),
                ),
            ),
            LendablePercent=x.get("lendablePercent"),
            BorrowingLimitPercent=x.get("borrowingLimitPercent"),
        )

    return Struct(
        Type=spec.get("type", ""),
        Limited=_ptr(spec.get("limited"), limited),
        Exempt=_ptr(spec.get("exempt"), lambda e: Struct(
            NominalConcurrencyShares=e.get("nominalConcurrencyShares"),
            LendablePercent=e.get("lendablePercent"))),
    )  # fmt: skip
