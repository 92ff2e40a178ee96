"""CEL as Kubernetes has it: the environment of kube-apiserver's CEL (CRD validation rules now,
admission policies later) over the ``common-expression-language`` package (Rust, imported on
first use).

That package parses and evaluates CEL but does not type-check, has no cost estimator and no
``.?``/``[?`` syntax, and knows only the functions registered on a ``cel.Context`` when it
evaluates. This module adds what kube-apiserver has:

- :func:`compile_expression` parses, then checks every function and variable the expression
  references against the environment (a ``compilation failed`` for anything undeclared, in
  cel-go's texts: ``ERROR: <input>:1:4: undeclared reference to 'foo' (in container '')``);
  the optional-field syntax ``a.?b`` and ``a[?k]`` is rewritten to calls before parsing;
- the CEL extensions kube enables (strings, lists, sets, math, encoders) and Kubernetes'
  libraries (lists, regex, urls, quantity, ip, cidr, format, semver) as Python functions
  registered on one shared context; values of Kubernetes' own types (a quantity, an IP, ...)
  travel through CEL as one-key maps (``{"@kubelite.quantity": "1.5"}``), compared by their
  canonical form;
- :func:`evaluate` runs a compiled expression, turning the library's errors into cel-go's texts
  (``no such key: x``, ``division by zero``, ``no such overload``, ...) in :class:`EvalError`;
- a cost guard standing for kube's cost limits (the Rust library exposes no cost): see
  :func:`estimated_cost`;
- for admission policies: composited variables read lazily as ``variables.<name>``
  (:mod:`.composition`), the authorizer library (:mod:`.authz`), ``Object{...}`` and
  ``JSONPatch{...}`` construction with ``jsonpatch.escapeKey`` (:mod:`.objects`), and
  ``string.format`` (:mod:`.formatting`). Variables that are null (``oldObject`` on a create)
  are declared null, and a variable an expression only selects fields of is handed to the
  program cut down to those fields (:func:`~.compiling.projections`).
"""

from __future__ import annotations

from kubelite.api.cel.compiling import (
    MAX_EXPRESSION_LENGTH,
    Compiled,
    compile_expression,
    result_kind,
)
from kubelite.api.cel.environment import known_functions
from kubelite.api.cel.evaluating import (
    PER_CALL_LIMIT,
    RUNTIME_BUDGET,
    STATIC_CRD_LIMIT,
    estimated_cost,
    evaluate,
)
from kubelite.api.cel.quantity import parse_quantity
from kubelite.api.cel.values import CompileError, EvalError

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "PER_CALL_LIMIT",
    "RUNTIME_BUDGET",
    "STATIC_CRD_LIMIT",
    "CompileError",
    "Compiled",
    "EvalError",
    "compile_expression",
    "estimated_cost",
    "evaluate",
    "known_functions",
    "parse_quantity",
    "result_kind",
]
