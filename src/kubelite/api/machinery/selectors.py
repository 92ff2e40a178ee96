"""Label and field selectors (``?labelSelector=``, ``?fieldSelector=``) as kube-apiserver has them.

Label selectors follow apimachinery's ``pkg/labels/selector.go``::

    <selector>    ::= "" | <requirement> | <requirement> "," <selector>
    <requirement> ::= KEY                                  exists
                    | "!" KEY                              does not exist
                    | KEY ("=" | "==" | "!=") [VALUE]      equality (an absent VALUE is "")
                    | KEY ("in" | "notin") "(" <values> ")"
                    | KEY (">" | "<") INTEGER              numeric comparison ("gt", "lt")
    <values>      ::= "" | VALUE | VALUE "," <values>      (empty members allowed: "(a,,b)")

Whitespace (space, tab, CR, LF) separates tokens anywhere; ``=!(),<>`` end a KEY or VALUE. KEY is
``[DNS-subdomain "/"] name``; name and VALUE are at most 63 bytes of ``[A-Za-z0-9_.-]``, starting
and ending alphanumeric (a VALUE may be empty). ``in``/``notin`` are keywords only where an operator
is expected. ``!=`` and ``notin`` also match objects that lack the key.

Field selectors follow ``pkg/fields/selector.go``: terms ``field=value``, ``field==value`` or
``field!=value`` joined by unescaped commas; in a value ``\\,`` ``\\=`` ``\\\\`` stand for the
character itself, any other escape or an unescaped ``=`` is an error. A missing field reads as "".

Error texts are apimachinery's, verbatim, which is what the 400 Status carries: kube-apiserver's
list/watch handler (``apiserver/pkg/endpoints/handlers/get.go``) decodes the query through
``ParameterCodec.DecodeParameters``, whose ``Convert_string_To_labels_Selector`` /
``Convert_string_To_fields_Selector`` (meta/v1 ``conversion.go``) return the parser's error
unwrapped, and answers ``errors.NewBadRequest(err.Error())``. (The ``couldn't parse the selector
string "...": ...`` wrapper is client-side, ``metav1.ParseToLabelSelector``.) An unsupported field
is rejected afterwards by the kind's field-label conversion (get.go: after ValidateListOptions,
``opts.FieldSelector.Transform(scope.Convertor.ConvertFieldLabel)``, its error a 400 as is; list
and watch alike): ``field label not supported: <f>`` for Pods, Events, Secrets, Namespaces,
Nodes, Services, ReplicationControllers, CSRs and custom resources; a few kinds word it their own
way (Job: ``field label "<f>" not supported for batchv1.Job``); kinds with no conversion of their
own, ConfigMap and ReplicaSet among them, fall back to runtime's
``"<f>" is not a known field selector: only "metadata.name", "metadata.namespace"``.

Which labels a kind accepts, where each reads its value and the kind's refusal are declared per
kind (:class:`FieldLabel`, ``ResourceInfo.field_labels``; built-ins in ``catalogue.extra``, custom
resources from the CRD's ``selectableFields``). :func:`object_matcher` parses a request's
selectors into a :class:`Selection`; the list or watch of a kind binds it to the kind
(:func:`for_kind`), which is where an unsupported label is refused. Values compare as kube's
GetAttrs renders them: strings as they are, booleans ``true``/``false``, integers in decimal, an
absent value as its Go zero value (``false`` for ``spec.hostNetwork``, ``0`` for a count).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kubelite.api import errors
from kubelite.api.catalogue.fieldlabels import DEFAULT_FIELDS, NOT_SUPPORTED, FieldLabel
from kubelite.api.errors import go_quote

Operator = Literal["=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"]


class SelectorError(ValueError):
    """A selector kube-apiserver would refuse with 400 BadRequest; ``str()`` is the message."""


# ---------------------------------------------------------------------------------------------
# Label key/value validation (apimachinery api/validate/content: IsLabelKey, IsLabelValue)

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FMT = f"({_NAME_FMT})?"
_DNS_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_NAME_RE, _VALUE_RE, _DNS_RE = (re.compile(f) for f in (_NAME_FMT, _VALUE_FMT, _DNS_FMT))
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(text: str, limit: int) -> bool:
    return len(text.encode()) > limit


def _label_key_errors(key: str) -> list[str]:
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) > 2:
        detail = _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
        suffix = " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        return [f"a valid label key {detail}{suffix}"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if _max_len(prefix, 253):
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS_RE.fullmatch(prefix):
                errs.append("prefix part " + _regex_error(_DNS_MSG, _DNS_FMT, "example.com"))
    if not name:
        errs.append("name part must be non-empty")
    elif _max_len(name, 63):
        errs.append("name part must be no more than 63 bytes")
    if not _NAME_RE.fullmatch(name):
        errs.append(
            "name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs = ["must be no more than 63 bytes"] if _max_len(value, 63) else []
    if not _VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _parse_int64(text: str) -> int | None:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


# ---------------------------------------------------------------------------------------------
# Label selectors


@dataclass(frozen=True)
class Requirement:
    """One ANDed term: ``key`` related to ``values`` (sorted, distinct) by ``operator``."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator in ("=", "==", "in"):
            return present and labels[self.key] in self.values
        if self.operator in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        have = _parse_int64(labels[self.key]) if present else None
        want = _parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if self.operator == "gt" else have < want


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector restricts nothing (matches every object)."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


_ID, _EOS = "identifier", "end of string"
_WHITESPACE = frozenset(" \t\r\n")
_SPECIAL = frozenset("=!(),<>")
_ID_END = _SPECIAL | _WHITESPACE | {"\0"}
_SYMBOLS = frozenset({"=", "==", "!", "!=", "(", ")", ",", "<", ">"})
# fmt: off
_OPERATORS: dict[str, Operator] = {
    "in": "in", "notin": "notin", "=": "=", "==": "==", "!=": "!=", ">": "gt", "<": "lt"
}
# fmt: on
_Token = tuple[str, str]  # (kind, literal); kind is _ID, _EOS, a symbol, "in" or "notin"


def _lex(text: str) -> list[_Token]:
    """Tokens as apimachinery's Lexer yields them (a NUL byte reads as end of input there, too)."""
    tokens: list[_Token] = []
    pos, size = 0, len(text)
    while True:
        while pos < size and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= size or text[pos] == "\0":
            tokens.append((_EOS, ""))
            return tokens
        end = pos + 1
        if text[pos] in _SPECIAL:  # longest symbol, growing one character at a time
            while end < size and text[pos : end + 1] in _SYMBOLS:
                end += 1
            kind = text[pos:end]
        else:
            while end < size and text[end] not in _ID_END:
                end += 1
            kind = text[pos:end] if text[pos:end] in ("in", "notin") else _ID
        tokens.append((kind, text[pos:end]))
        pos = end + 1 if end < size and text[end] == "\0" else end


class _LabelParser:
    def __init__(self, text: str) -> None:
        self._tokens = _lex(text)
        self._pos = 0

    def _peek(self) -> _Token:
        kind, lit = self._tokens[min(self._pos, len(self._tokens) - 1)]
        return (_ID if kind in ("in", "notin") else kind), lit

    def _next(self, *, keywords: bool = False) -> _Token:
        kind, lit = self._tokens[min(self._pos, len(self._tokens) - 1)]
        self._pos += 1
        return (kind if keywords or kind not in ("in", "notin") else _ID), lit

    def parse(self) -> LabelSelector:
        requirements: list[Requirement] = []
        while True:
            kind, lit = self._peek()
            if kind == _EOS:
                break
            if kind not in (_ID, "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            kind, lit = self._next()
            if kind == _EOS:
                break
            if kind != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            kind, lit = self._peek()
            if kind not in (_ID, "!"):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")
        return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))

    def _requirement(self) -> Requirement:
        kind, key = self._next()
        negated = kind == "!"
        if negated:
            kind, key = self._next()
        if kind != _ID:
            raise SelectorError(f"found '{key}', expected: identifier")
        if errs := _label_key_errors(key):
            raise SelectorError(f"<nil>: Invalid value: {go_quote(key)}: {'; '.join(errs)}")
        if negated:
            return Requirement(key, "!")
        if self._peek()[0] in (_EOS, ","):
            return Requirement(key, "exists")
        kind, lit = self._next(keywords=True)
        if kind not in _OPERATORS:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        operator = _OPERATORS[kind]
        values = self._value_set() if operator in ("in", "notin") else {self._exact_value()}
        return _new_requirement(key, operator, sorted(values))

    def _exact_value(self) -> str:
        if self._peek()[0] in (_EOS, ","):
            return ""
        kind, lit = self._next()
        if kind != _ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        return lit

    def _value_set(self) -> set[str]:
        kind, lit = self._next()
        if kind != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        kind, lit = self._peek()
        if kind == ")":
            self._next()
            return {""}
        if kind not in (_ID, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:  # a comma list where an empty member is "": "(a,,b)", "(,a)", "(a,)"
            kind, lit = self._next()
            if kind == _ID:
                values.add(lit)
                kind, lit = self._peek()
                if kind == ")":
                    break
                if kind != ",":
                    raise SelectorError(f"found '{lit}', expected: ',' or ')'")
            elif kind == ",":
                if not values:
                    values.add("")
                if self._peek()[0] in (")", ","):
                    values.add("")
                if self._peek()[0] == ")":
                    break
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")
        self._next()  # the ")"
        return values


def _new_requirement(key: str, operator: Operator, values: list[str]) -> Requirement:
    """apimachinery's NewRequirement checks on the values; errors aggregate as Go prints them."""
    errors: list[str] = []
    if operator in ("gt", "lt"):
        errors += [
            f"values[{i}]: Invalid value: {go_quote(v)}: "
            "for 'Gt', 'Lt' operators, the value must be an integer"
            for i, v in enumerate(values)
            if _parse_int64(v) is None
        ]
    for i, value in enumerate(values):
        if errs := _label_value_errors(value):
            errors.append(
                f"values[{i}][{key}]: Invalid value: {go_quote(value)}: {'; '.join(errs)}"
            )
    errors = list(dict.fromkeys(errors))
    if errors:
        raise SelectorError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return Requirement(key, operator, tuple(values))


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a ``labelSelector``; raise `SelectorError` with kube-apiserver's 400 message."""
    return _LabelParser(text).parse()


#: A metav1.LabelSelector's ``matchExpressions`` operators as requirements' operators.
_EXPRESSION_OPERATORS: dict[str, Operator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
}


def label_selector_of(selector: Mapping[str, Any]) -> LabelSelector:
    """A metav1.LabelSelector object (``matchLabels``, ``matchExpressions``) as a selector, as
    apimachinery's ``LabelSelectorAsSelector``: every label and expression ANDed, the empty
    object matching everything. Keys and values are taken as stored (validation checked them
    on write); an unknown operator, or ``In``/``NotIn`` without values, is a `SelectorError`."""
    requirements: list[Requirement] = []
    labels = selector.get("matchLabels")
    for key, value in (labels if isinstance(labels, Mapping) else {}).items():
        requirements.append(Requirement(str(key), "=", (str(value),)))
    expressions = selector.get("matchExpressions")
    for expr in expressions if isinstance(expressions, list) else []:
        if not isinstance(expr, Mapping):
            continue
        key, op = str(expr.get("key") or ""), expr.get("operator")
        operator = _EXPRESSION_OPERATORS.get(op) if isinstance(op, str) else None
        if operator is None:
            raise SelectorError(f"{go_quote(str(op))} is not a valid label selector operator")
        raw = expr.get("values")
        values = tuple(sorted({str(v) for v in raw})) if isinstance(raw, list) else ()
        if operator in ("in", "notin") and not values:
            raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
        requirements.append(Requirement(key, operator, values))
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


# ---------------------------------------------------------------------------------------------
# Field selectors


@dataclass(frozen=True)
class FieldTerm:
    field: str
    operator: Literal["=", "!="]
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.field, "") == self.value) == (self.operator == "=")


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[FieldTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(t.matches(fields) for t in self.terms)

    def requires_exact_match(self, field: str) -> str | None:
        """The value an ``=``/``==`` term pins ``field`` to (the first such term), else None."""
        return next((t.value for t in self.terms if t.field == field and t.operator == "="), None)

    def exact_name(self) -> str | None:
        return self.requires_exact_match("metadata.name")

    def exact_namespace(self) -> str | None:
        return self.requires_exact_match("metadata.namespace")


def _split_terms(text: str) -> list[str]:
    """Split on commas not preceded by an escaping backslash (escapes stay in the terms)."""
    terms, start, escaped = [], 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    return [*terms, text[start:]] if text else []


def _unescape(value: str) -> str:
    out, escaped = [], False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(
    text: str, supported: Collection[str] | None = DEFAULT_FIELDS
) -> FieldSelector:
    """Parse a ``fieldSelector``; fields outside ``supported`` are refused as kube-apiserver does
    (None: any field, as the request info reads it).

    Terms are checked in sorted order, as apimachinery sorts them, so the first error reported is
    the one kube-apiserver reports.
    """
    terms: list[FieldTerm] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        for i in range(len(part)):  # the first operator wins; "!=" and "==" before "="
            op = next((op for op in ("!=", "==", "=") if part.startswith(op, i)), None)
            if op is not None:
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        value = _unescape(part[i + len(op) :])
        terms.append(FieldTerm(part[:i], "!=" if op == "!=" else "=", value))
    for term in terms:
        if supported is not None and term.field not in supported:
            raise SelectorError(f"field label not supported: {term.field}")
    return FieldSelector(tuple(terms))


def object_fields(obj: Mapping[str, Any], extra: Collection[str] = ()) -> dict[str, str]:
    """The selectable fields of ``obj``: name, namespace and each dotted path in ``extra``.

    Scalars render as Go would (``true``/``false``, ``3``); a missing or non-scalar value is "".
    """
    fields: dict[str, str] = {}
    for path in (*DEFAULT_FIELDS, *extra):
        node: Any = obj
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, bool):
            fields[path] = "true" if node else "false"
        elif isinstance(node, str | int):
            fields[path] = str(node)
        else:
            fields[path] = ""
    return fields


Matcher = Callable[[dict[str, Any]], bool]

_JSON_PATH_STEP = re.compile(r"""\.([^.\[\]]+)|\[\s*'([^']*)'\s*\]|\[\s*"([^"]*)"\s*\]""")


def json_path_keys(path: str) -> tuple[str, ...]:
    """The keys of a CRD ``selectableFields`` jsonPath (``.spec.color``, ``.metadata['a.b']``);
    a path of another form reads nothing."""
    keys, pos = [], 0
    while pos < len(path):
        match = _JSON_PATH_STEP.match(path, pos)
        if match is None:
            return ()
        keys.append(next(g for g in match.groups() if g is not None))
        pos = match.end()
    return tuple(keys)


def field_label_error(template: str, label: str) -> str:
    """A kind's refusal of ``label`` (``template`` as :data:`NOT_SUPPORTED`)."""
    return template.replace("{quoted}", go_quote(label)).replace("{label}", label)


class Selection:
    """A request's parsed ``labelSelector`` and ``fieldSelector`` (and, for a watch of one
    object, its name), called on an object to say whether it is selected.

    Unbound, the field terms read each label at its own dotted path; :meth:`for_kind` checks them
    against a kind's labels (400 with the kind's text) and reads each where the kind keeps it.
    """

    __slots__ = ("_labels", "fields", "labels", "name")

    def __init__(
        self,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        name: str | None,
        field_labels: Mapping[str, FieldLabel] | None = None,
    ) -> None:
        self.labels = labels
        self.fields = fields
        self.name = name
        self._labels = field_labels

    def for_kind(self, labels: Iterable[FieldLabel], error: str = NOT_SUPPORTED) -> Selection:
        """This selection over a kind that accepts ``labels``; raises kube's 400 (``error``,
        see :func:`field_label_error`) for the first term, in sorted order, naming another."""
        known = {label.name: label for label in labels}
        terms = self.fields.terms if self.fields is not None else ()
        for term in terms:
            if term.field not in known:
                raise errors.bad_request(field_label_error(error, term.field))
        used = {t.field: known[t.field] for t in terms}
        return Selection(self.labels, self.fields, self.name, used)

    def __call__(self, obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.name is not None and meta.get("name") != self.name:
            return False
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = {}  # stored before labels were checked, of another shape: no labels
        if self.labels is not None and not self.labels.matches(labels):
            return False
        if self.fields is None or self.fields.empty:
            return True
        if self._labels is None:
            fields = object_fields(obj, [t.field for t in self.fields.terms])
        else:
            fields = {name: label.value(obj) for name, label in self._labels.items()}
        return self.fields.matches(fields)


def for_kind(
    matcher: Matcher | None, labels: Iterable[FieldLabel], error: str = NOT_SUPPORTED
) -> Matcher | None:
    """``matcher`` bound to a kind's field labels when it is a request's :class:`Selection`
    (raising the kind's 400 for a label it lacks); any other matcher as it is."""
    return matcher.for_kind(labels, error) if isinstance(matcher, Selection) else matcher


def object_matcher(label_text: str, field_text: str, name: str | None = None) -> Matcher | None:
    """The objects a request's ``labelSelector`` and ``fieldSelector`` select (and, for a watch
    of one object, its ``name``); None when nothing is selected out. A malformed selector is
    kube-apiserver's 400 with the parser's text; a field label the kind lacks is refused when
    the list or watch binds the selection to its kind (:func:`for_kind`)."""
    if not label_text and not field_text:
        return None if name is None else Selection(None, None, name)
    try:
        labels = parse_label_selector(label_text)
        fields = parse_field_selector(field_text, supported=_ANY_FIELD)
    except SelectorError as exc:
        raise errors.bad_request(str(exc))
    return Selection(labels, fields, name)


class _AnyField(Collection[str]):
    """Every label: grammar only, the kind's check comes later."""

    def __contains__(self, item: object) -> bool:
        return True

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0


_ANY_FIELD = _AnyField()
