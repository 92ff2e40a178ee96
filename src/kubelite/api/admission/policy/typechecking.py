"""Type checking a ValidatingAdmissionPolicy against the schemas of the kinds it matches, for
its ``status.typeChecking.expressionWarnings`` (apiserver
``pkg/admission/plugin/policy/validating/typechecking.go``, run by kube-controller-manager's
status controller).

The kinds: each ``spec.matchConstraints.resourceRules`` entry without a wildcard group or
version gives its (group, version, resource)s, wildcard resources and subresources left out,
each resolved to its kind through the catalogue (kube's RESTMapper; custom kinds are in it once
their CRD is served), sorted by group, version, kind; as in kube, the collection ends at the
10th kind resolved within one rule. A kind whose schema kubelite does not know is left out, as
kube leaves out a kind whose schema is not found. ``object`` and ``oldObject`` are typed as the
kind; ``params`` as ``spec.paramKind`` when its schema is known (else dyn).

Each validation's ``expression``, then its ``messageExpression``, is checked against each kind;
the warning of an expression with issues under some kinds reads, per such kind,
``<group>/<version>, Kind=<kind>: <cel-go's issues>\\n`` (the core group's is ``/v1, Kind=...``),
joined by newlines, at ``spec.validations[i].expression`` (or ``.messageExpression``).

kubelite has no schema-typed CEL checker; what it finds is the issue users hit most, cel-go's
``undefined field 'name'``: a chain of field selections rooted at ``object``, ``oldObject`` or
``params`` (``object.spec.replicas``, also the operand of ``has(...)``, whose issue cel-go places
at the macro's ``(``) selecting a name that a struct of the schema (an object with properties
and no additionalProperties) does not declare. Everything it cannot type ends the chain with no
issue: an index, a method or macro call, an optional selection ``.?``, a scalar, a list, an
untyped or free-form object, a name that may be an escaped property (``__``), a root rebound by
a macro or ``cel.bind``. An expression kubelite's own compile refuses (kube's warning would then
carry other issues) gets no warning, and neither do the issues only a full type check finds
(``found no matching overload``, a field of a scalar, ``request`` or ``namespaceObject``
fields). So each issue kubelite reports is one kube reports, but kube may report more: a policy
with such other issues has warnings (or issues in a warning) kubelite does not write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubelite.api import cel
from kubelite.api.admission.policy.expressions import OBJECT, OLD_OBJECT, PARAMS, declared
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.cel.compiling import _issue
from kubelite.api.cel.syntax import _Token, _tokens
from kubelite.api.fieldmanager.shapes import MAP, Shape, shape_of

__all__ = [
    "MAX_TYPES_TO_CHECK",
    "GroupVersionKind",
    "check_policy",
    "types_to_check",
    "undefined_fields",
]

Obj = dict[str, Any]

#: kube's maxTypesToCheck (counted per rule, as kube counts)
MAX_TYPES_TO_CHECK = 10
#: cel-go's maxErrorsToReport
_MAX_ISSUES = 100


@dataclass(frozen=True, order=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        """Go's ``schema.GroupVersionKind.String()``: ``apps/v1, Kind=Deployment``."""
        return f"{self.group}/{self.version}, Kind={self.kind}"


def check_policy(policy: Obj, catalogue: Catalogue) -> list[Obj]:
    """kube's ``TypeChecker.Check``: the policy's expression warnings (``fieldRef``,
    ``warning``), empty when there are none."""
    spec = policy.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    kinds: list[tuple[GroupVersionKind, Shape]] = []
    for gvk in types_to_check(policy, catalogue):
        shape = _schema(catalogue.lookup_kind(gvk.group, gvk.version, gvk.kind))
        if shape is not None:
            kinds.append((gvk, shape))
    params = _params_shape(spec, catalogue)
    has_params = isinstance(spec.get("paramKind"), dict)
    composited = [
        str(v.get("name", "")) for v in _items(spec.get("variables")) if isinstance(v, dict)
    ]
    warnings: list[Obj] = []
    for i, validation in enumerate(_items(spec.get("validations"))):
        if not isinstance(validation, dict):
            continue
        for field in ("expression", "messageExpression"):
            source = validation.get(field)
            if not isinstance(source, str) or not source:
                continue
            text = _check_expression(source, kinds, params, has_params, composited)
            if text:
                warnings.append({"fieldRef": f"spec.validations[{i}].{field}", "warning": text})
    return warnings


def types_to_check(policy: Obj, catalogue: Catalogue) -> list[GroupVersionKind]:
    """kube's ``typesToCheck``: the kinds of the policy's resource rules, sorted."""
    spec = policy.get("spec")
    constraints = spec.get("matchConstraints") if isinstance(spec, dict) else None
    rules = constraints.get("resourceRules") if isinstance(constraints, dict) else None
    found: set[GroupVersionKind] = set()
    for rule in _items(rules):
        if not isinstance(rule, dict):
            continue
        groups = _without_wildcards(rule.get("apiGroups"))
        versions = _without_wildcards(rule.get("apiVersions"))
        resources = [r for r in _strings(rule.get("resources")) if "*" not in r and "/" not in r]
        if not groups or not versions or not resources:
            continue
        count = 0
        for group in sorted(groups):
            for version in sorted(versions):
                for resource in sorted(resources):
                    info = _kind_for(catalogue, group, version, resource)
                    if info is None:
                        continue
                    found.add(GroupVersionKind(info.group, info.version, info.kind))
                    count += 1
                    if count == MAX_TYPES_TO_CHECK:
                        return sorted(found)
    return sorted(found)


def _check_expression(
    source: str,
    kinds: list[tuple[GroupVersionKind, Shape]],
    params: Shape | None,
    has_params: bool,
    composited: list[str],
) -> str:
    """kube's ``CheckExpression`` results as text: one entry per kind with issues."""
    if not kinds:
        return ""
    try:  # an expression that does not compile as it is would carry other issues in kube
        cel.compile_expression(source, declared(has_params, True), composited=composited)
    except cel.CompileError:
        return ""
    results: list[str] = []
    for gvk, shape in kinds:
        roots = {OBJECT: shape, OLD_OBJECT: shape}
        if params is not None:
            roots[PARAMS] = params
        issues = undefined_fields(source, roots)
        if issues:
            results.append(f"{gvk}: {_display(source, issues)}\n")
    return "\n".join(results)


def undefined_fields(source: str, roots: Mapping[str, Shape]) -> list[tuple[int, str]]:
    """cel-go's ``undefined field`` issues of ``source`` with the ``roots`` variables typed
    by their shapes: (position of the issue, message), in source order."""
    tokens = _tokens(source)
    rebound = _rebound(tokens)
    issues: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text not in roots or tok.text in rebound:
            continue
        if i and tokens[i - 1].text in (".", ".?"):
            continue  # a field of that name, not the variable
        if _text(tokens, i + 1) == "(":
            continue
        presence = _presence_position(tokens, i)
        shape: Shape | None = roots[tok.text]
        j = i + 1
        while shape is not None and _text(tokens, j) == "." and _kind(tokens, j + 1) == "ident":
            after = _text(tokens, j + 2)
            if after == "(":
                break  # a method or macro call
            name = tokens[j + 1].text
            shape, undefined = _select(shape, name)
            if undefined:
                at = presence if presence is not None and after == ")" else tokens[j].pos
                issues.append((at, f"undefined field '{name}'"))
            j += 2
    issues.sort()
    return issues


def _select(shape: Shape, name: str) -> tuple[Shape | None, bool]:
    """(the shape of field ``name`` of ``shape``, None where kubelite stops typing; whether
    cel-go finds the field undefined)."""
    if shape.kind != MAP or "__" in name:
        return None, False
    element = shape.element
    member, is_declared = shape.member(name)
    if element is None:  # a struct: its declared fields only
        return (member, False) if is_declared else (None, True)
    if is_declared:
        return None, False  # properties and additionalProperties: kube types it as a map
    return element, False


def _rebound(tokens: list[_Token]) -> set[str]:
    """Names a macro or ``cel.bind`` may bind (an identifier argument followed by another):
    kubelite does not track their scopes, so variables of those names are not checked."""
    return {
        tok.text
        for i, tok in enumerate(tokens)
        if tok.kind == "ident"
        and _text(tokens, i - 1) in ("(", ",")
        and _text(tokens, i + 1) == ","
    }


def _presence_position(tokens: list[_Token], i: int) -> int | None:
    """Where cel-go places the issue of the last selection of a chain starting at token ``i``
    that is the argument of the ``has`` macro: at the macro's ``(``; None elsewhere."""
    opened = _text(tokens, i - 1) == "(" and _text(tokens, i - 2) == "has"
    if opened and _text(tokens, i - 3) not in (".", ".?"):
        return tokens[i - 1].pos
    return None


def _display(source: str, issues: list[tuple[int, str]]) -> str:
    """cel-go's ``Issues.String()``: each issue with its snippet, at most 100."""
    shown = [_issue(source, pos, message) for pos, message in issues[:_MAX_ISSUES]]
    if len(issues) > _MAX_ISSUES:
        shown.append(f"{len(issues) - _MAX_ISSUES} more errors were truncated")
    return "\n".join(shown)


def _schema(info: ResourceInfo | None) -> Shape | None:
    """The kind's schema, None when kubelite knows none (kube's ErrSchemaNotFound)."""
    if info is None or not (info.schema or info.schema_ref):
        return None
    shape = shape_of(info)
    return shape if shape.kind == MAP else None


def _params_shape(spec: Obj, catalogue: Catalogue) -> Shape | None:
    param_kind = spec.get("paramKind")
    if not isinstance(param_kind, dict):
        return None
    api_version, kind = param_kind.get("apiVersion"), param_kind.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or api_version.count("/") > 1:
        return None
    return _schema(catalogue.lookup_api_version(api_version, kind))


def _kind_for(catalogue: Catalogue, group: str, version: str, resource: str) -> ResourceInfo | None:
    """kube's ``RESTMapper.KindsFor``: the kind served as ``resource`` (plural or singular)."""
    info = catalogue.lookup(group, version, resource)
    if info is not None:
        return info
    for candidate in catalogue.resources(group, version):
        if candidate.singular == resource:
            return candidate
    return None


def _without_wildcards(values: Any) -> list[str]:
    """kube's ``extractGroups``/``extractVersions``: nothing when any value has a ``*``."""
    strings = _strings(values)
    return [] if any("*" in s for s in strings) else strings


def _strings(values: Any) -> list[str]:
    return [v for v in _items(values) if isinstance(v, str)]


def _items(values: Any) -> Iterable[Any]:
    return values if isinstance(values, list) else ()


def _text(tokens: list[_Token], i: int) -> str:
    return tokens[i].text if 0 <= i < len(tokens) else ""


def _kind(tokens: list[_Token], i: int) -> str:
    return tokens[i].kind if 0 <= i < len(tokens) else ""
