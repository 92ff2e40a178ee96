"""The admissionregistration.k8s.io group (kube's ``pkg/registry/admissionregistration``): the
webhook configurations (:mod:`.webhookstorage`) and the admission policies with their bindings
(:mod:`.policystorage`), each write answered once this server's follower holds it; their
defaults (:mod:`.defaults`) and validation (:mod:`.validation`). Admission itself is
:mod:`kubelite.api.admission`'s."""

from __future__ import annotations

from kubelite.api.kinds.admissionregistration.defaults import (
    default_mutating_admission_policy,
    default_mutating_webhooks,
    default_validating_admission_policy,
    default_validating_admission_policy_binding,
    default_validating_webhooks,
)
from kubelite.api.kinds.admissionregistration.policystorage import policy_storages
from kubelite.api.kinds.admissionregistration.validation import (
    validate_mutating_binding,
    validate_mutating_policy,
    validate_validating_binding,
    validate_validating_policy,
)
from kubelite.api.kinds.admissionregistration.webhookstorage import webhook_storages
from kubelite.api.kinds.resource import Resource, StorageFactory
from kubelite.api.kinds.rules import BuiltinStrategy, Defaulter, Validator
from kubelite.api.machinery.strategy import STATUS_KEEPS_METADATA

GROUP = "admissionregistration.k8s.io"


def _resource(
    plural: str,
    storages: StorageFactory,
    defaulter: Defaulter,
    validators: tuple[Validator, ...] = (),
    status_keeps: tuple[str, ...] = (),
) -> Resource:
    strategy = BuiltinStrategy(
        defaulters=(defaulter,),
        validators=validators,
        tracks_generation=True,
        allow_unconditional_update=False,
        status_keeps=status_keeps,
    )
    return Resource(GROUP, plural, strategy, storages)


RESOURCES: tuple[Resource, ...] = (
    _resource("validatingwebhookconfigurations", webhook_storages, default_validating_webhooks),
    _resource("mutatingwebhookconfigurations", webhook_storages, default_mutating_webhooks),
    _resource(
        "validatingadmissionpolicies",
        policy_storages,
        default_validating_admission_policy,
        (validate_validating_policy,),
        STATUS_KEEPS_METADATA,
    ),
    _resource(
        "validatingadmissionpolicybindings",
        policy_storages,
        default_validating_admission_policy_binding,
        (validate_validating_binding,),
    ),
    _resource(
        "mutatingadmissionpolicies",
        policy_storages,
        default_mutating_admission_policy,
        (validate_mutating_policy,),
    ),
    _resource(
        "mutatingadmissionpolicybindings",
        policy_storages,
        default_validating_admission_policy_binding,
        (validate_mutating_binding,),
    ),
)
