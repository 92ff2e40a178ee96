"""``--history-retention``: the flag's grammar, and resources resolved to key prefixes as kubectl
names resources."""

from __future__ import annotations

import pytest

from kubelite.api.catalogue import Catalogue, load_builtin_catalogue
from kubelite.api.machinery.retention import parse_retention, resolve, resolve_retention
from kubelite.storage import Retention

DAY = 86400.0


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


def test_counts_and_ages() -> None:
    assert parse_retention("configmaps=7d, deployments=100,pods=90s,jobs=12h,cm=30m") == {
        "configmaps": Retention(max_age_seconds=7 * DAY),
        "deployments": Retention(max_versions=100),
        "pods": Retention(max_age_seconds=90),
        "jobs": Retention(max_age_seconds=12 * 3600),
        "cm": Retention(max_age_seconds=1800),
    }
    assert parse_retention("") == {}


def test_a_resource_named_twice_has_both_limits() -> None:
    assert parse_retention("configmaps=7d,configmaps=5") == {"configmaps": Retention(7 * DAY, 5)}


@pytest.mark.parametrize("text", ["configmaps", "=3", "configmaps=0", "configmaps=1w", "cm=-1"])
def test_bad_items_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="invalid history retention"):
        parse_retention(text)


@pytest.mark.parametrize(
    ("spelling", "prefix"),
    [
        ("configmaps", "/registry/configmaps/"),
        ("ConfigMap", "/registry/configmaps/"),
        ("cm", "/registry/configmaps/"),
        ("configmap", "/registry/configmaps/"),
        ("deployments.apps", "/registry/apps/deployments/"),
        ("deploy", "/registry/apps/deployments/"),
        ("clusterroles", "/registry/rbac.authorization.k8s.io/clusterroles/"),
        ("events", "/registry/events/"),
        ("events.events.k8s.io", "/registry/events/"),  # stored with core's events
        ("widgets.example.com", "/registry/example.com/widgets/"),  # a custom resource
    ],
)
def test_resources_resolve_to_their_key_prefix(
    catalogue: Catalogue, spelling: str, prefix: str
) -> None:
    assert resolve(spelling, catalogue) == prefix


@pytest.mark.parametrize(
    ("spelling", "message"),
    [
        ("foos", 'doesn\'t have a resource type "foos"'),
        ("deployments.batch", 'doesn\'t have a resource type "deployments.batch"'),
        ("subjectaccessreviews", "objects are not stored"),
    ],
)
def test_unknown_or_unstored_resources_are_refused(
    catalogue: Catalogue, spelling: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        resolve(spelling, catalogue)


def test_two_spellings_of_one_resource_combine(catalogue: Catalogue) -> None:
    spec = {"cm": Retention(max_versions=3), "configmaps": Retention(max_age_seconds=DAY)}
    assert resolve_retention(spec, catalogue) == {"/registry/configmaps/": Retention(DAY, 3)}
