"""Field errors as apimachinery writes them (``field.Error``: ``Required value``, ``Invalid
value: <v>``, ``Unsupported value: <v>: supported values: ...``, ``Forbidden``), the rendering of a
bad value as kube-apiserver 1.34+ prints it (field/errors.go ``ErrorBody``: int64/int32/bool
bare, a ``string`` with ``%q``, anything else, maps, structs, typed strings, pointers, as Go's
``json.Marshal`` writes it; kinds whose Go type is internal, without JSON tags, with Go's field
names, as kube does), and the label-selector checks every rule module shares.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kubelite.api.errors import Cause, go_quote
from kubelite.api.machinery.selectors import _label_key_errors, _label_value_errors

Obj = dict[str, Any]

# -- field errors ----------------------------------------------------------------------------


class Struct(dict[str, Any]):
    """A Go struct's JSON: fields in declaration order (a plain dict is a Go map: sorted keys)."""


def go_json(value: Any) -> str:
    """``json.Marshal`` of a Go value built from decoded JSON: maps with sorted keys, structs
    (:class:`Struct`) in field order, compact, HTML characters escaped as Go does."""

    def norm(v: Any) -> Any:
        if isinstance(v, Struct):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, dict):
            return {k: norm(v[k]) for k in sorted(v)}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    text = json.dumps(norm(value), separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(ch, esc)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: a Go ``string`` quoted with ``%q``, numbers and
    booleans bare, anything else as JSON. Pass :class:`Typed` for a typed Go string."""
    if isinstance(value, Typed):
        return go_json(str(value))
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return go_json(value)


class Typed(str):
    """A value of a named Go string type (``RestartPolicy``, ``PathType``): printed as JSON."""


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    text = f"Invalid value: {render(value)}" + (f": {detail}" if detail else "")
    return Cause("FieldValueInvalid", text, path)


def not_supported(path: str, value: Any, supported: Sequence[str]) -> Cause:
    listed = ", ".join(go_quote(s) for s in supported)
    text = f"Unsupported value: {render(value)}" + (
        f": supported values: {listed}" if supported else ""
    )
    return Cause("FieldValueNotSupported", text, path)


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", "Forbidden" + (f": {detail}" if detail else ""), path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {render(value)}", path)


def too_many(path: str, actual: int, most: int) -> Cause:
    items = "item" if most == 1 else "items"
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {most} {items}", path)


IMMUTABLE = "field is immutable"
NEGATIVE = "must be greater than or equal to 0"


def nonnegative(value: Any, path: str) -> list[Cause]:
    """ValidateNonnegativeField."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, NEGATIVE)]
    return []


def as_dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int | None:
    """A JSON integer (not a boolean), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


# -- label selectors (apimachinery meta/v1/validation) -----------------------------------------

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def selector_value(selector: Any) -> Struct:
    """A metav1.LabelSelector as ``json.Marshal`` writes it (both fields omitempty)."""
    sel = as_dict(selector)
    out = Struct()
    if sel.get("matchLabels"):
        out["matchLabels"] = sel["matchLabels"]
    exprs = []
    for e in as_list(sel.get("matchExpressions")):
        e = as_dict(e)
        req = Struct(key=as_str(e.get("key")), operator=as_str(e.get("operator")))
        if e.get("values"):
            req["values"] = e["values"]
        exprs.append(req)
    if exprs:
        out["matchExpressions"] = exprs
    return out


def label_causes(labels: Any, path: str) -> list[Cause]:
    """ValidateLabels: each key a qualified name, each value a label value."""
    causes: list[Cause] = []
    found = as_dict(labels)
    for key in sorted(found):  # Go ranges over the map in random order
        value = found[key]
        causes += [invalid(path, key, m) for m in _label_key_errors(key)]
        if isinstance(value, str):
            causes += [invalid(path, value, m) for m in _label_value_errors(value)]
    return causes


def set_operator_causes(op: str, values: list[Any], path: str) -> list[Cause] | None:
    """The values an In/NotIn (some) or Exists/DoesNotExist (none) requirement takes, as label
    and node selector requirements check them; None for any other operator."""
    if op in ("In", "NotIn"):
        detail = "must be specified when `operator` is 'In' or 'NotIn'"
        return [] if values else [required(path, detail)]
    if op in ("Exists", "DoesNotExist"):
        detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        return [forbidden(path, detail)] if values else []
    return None


def selector_causes(selector: Any, path: str) -> list[Cause]:
    """ValidateLabelSelector (AllowInvalidLabelValueInSelector false)."""
    sel = as_dict(selector)
    causes = label_causes(sel.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(as_list(sel.get("matchExpressions"))):
        expr = as_dict(expr)
        at = f"{path}.matchExpressions[{i}]"
        op, values = as_str(expr.get("operator")), as_list(expr.get("values"))
        set_causes = set_operator_causes(op, values, f"{at}.values")
        if set_causes is None:
            causes.append(invalid(f"{at}.operator", Typed(op), "not a valid selector operator"))
        else:
            causes += set_causes
        key = as_str(expr.get("key"))
        causes += [invalid(f"{at}.key", key, m) for m in _label_key_errors(key)]
        for j, value in enumerate(values):
            if isinstance(value, str):
                causes += [
                    invalid(f"{at}.values[{j}]", value, m) for m in _label_value_errors(value)
                ]
    return causes


def selector_parses(selector: Any) -> bool:
    """Whether LabelSelectorAsSelector succeeds (a known operator, In/NotIn with values,
    Exists/DoesNotExist without, valid keys and values)."""
    return not selector_causes(selector, "")


def selector_empty(selector: Any) -> bool:
    sel = as_dict(selector)
    return not sel.get("matchLabels") and not sel.get("matchExpressions")


def selector_matches(selector: Any, labels: Any) -> bool:
    """LabelSelectorAsSelector(selector).Matches(labels); an empty selector matches everything."""
    sel, have = as_dict(selector), as_dict(labels)
    for name, wanted in as_dict(sel.get("matchLabels")).items():
        if have.get(name) != wanted:
            return False
    for item in as_list(sel.get("matchExpressions")):
        expr = as_dict(item)
        key, op, values = as_str(expr.get("key")), expr.get("operator"), as_list(expr.get("values"))
        present = key in have
        if op == "In" and not (present and have[key] in values):
            return False
        if op == "NotIn" and present and have[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def mismatch(selector: Any, labels: Any) -> bool:
    """``!selector.Empty() && !selector.Matches(labels)`` for LabelSelectorAsSelector(selector):
    a nil selector is ``Nothing()`` (matches nothing), an empty one ``Everything()``."""
    if not isinstance(selector, dict):
        return True
    return not selector_empty(selector) and not selector_matches(selector, labels)


def selector_mismatch(labels: Any) -> Cause:
    """The 422 cause of a workload whose template's labels its selector does not match."""
    return invalid(
        "spec.template.metadata.labels",
        labels_value(labels),
        "`selector` does not match template `labels`",
    )


def labels_value(labels: Any) -> Any:
    """A template's labels as field errors print them (a nil map is ``null``)."""
    return labels if isinstance(labels, dict) else None


# -- int-or-percent (ValidatePositiveIntOrPercent, IsNotMoreThan100Percent) -----------------------
