"""Admission policies: ValidatingAdmissionPolicy and MutatingAdmissionPolicy
(``admissionregistration.k8s.io/v1``) as kube-apiserver's admission plugins run them
(k8s.io/apiserver ``pkg/admission/plugin/policy/validating`` and ``.../mutating``).

- :mod:`.source`: the policies and bindings held in memory, compiled, kept current by watches
  (:class:`PolicyFollower`, whose ``settled`` lets a policy write wait for it);
- :mod:`.matching`: match constraints and binding match resources against a write;
- :mod:`.params`: a binding's params;
- :mod:`.expressions` and :mod:`.activation`: the CEL environment and what it sees of a write;
- :mod:`.validator` and :mod:`.validating`: the validating policy's evaluation and plugin;
- :mod:`.mutations` and :mod:`.mutating`: the mutating policy's patches and plugin;
- :mod:`.plugins`: both plugins and their follower, built for a server.
"""

from __future__ import annotations

from kubelite.api.admission.policy.mutating import MutatingPolicyAdmission
from kubelite.api.admission.policy.mutations import compile_mutating_policy
from kubelite.api.admission.policy.plugins import AdmissionPolicies
from kubelite.api.admission.policy.source import PLURALS, NamespaceMirror, PolicyFollower, PolicySet
from kubelite.api.admission.policy.validating import ValidatingPolicyAdmission
from kubelite.api.admission.policy.validator import compile_policy

__all__ = [
    "PLURALS",
    "AdmissionPolicies",
    "MutatingPolicyAdmission",
    "NamespaceMirror",
    "PolicyFollower",
    "PolicySet",
    "ValidatingPolicyAdmission",
    "compile_mutating_policy",
    "compile_policy",
]
