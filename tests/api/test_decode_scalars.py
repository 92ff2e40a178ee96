"""api/encoding/scalars, decodeerrors and decoding: Go's decoding texts for the scalar types kube
reads itself (quantities, base64, RFC 3339 times), the nesting depth scan, and a kind's body
decoded by its schema."""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.api.catalogue import build_builtin_catalogue
from kubelite.api.encoding import decodeerrors, decoding, scalars
from kubelite.api.machinery import names

FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX = "unable to parse quantity's suffix"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("1", None), ("1.5", None), ("100m", None), ("1Gi", None), ("1e3", None),
        ("1E-3", None), (".5", None), ("+1", None), ("-1", None), ("0", None),
        ("", FORMAT), ("abc", FORMAT), ("1x", FORMAT), ("1Gx", FORMAT), ("1.5.5", FORMAT),
        ("1e", SUFFIX), ("1Ki5", SUFFIX), ("1ee3", SUFFIX),
    ],
)  # fmt: skip
def test_quantity_errors(text: str, error: str | None) -> None:
    assert scalars.quantity_error(text) == error


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", None), ("YQ==", None), ("YWJj", None), ("YW\nJj", None),
        ("abc", "illegal base64 data at input byte 0"),
        ("YQ=", "illegal base64 data at input byte 3"),
        ("YW Jj", "illegal base64 data at input byte 2"),
        ("YQ==YQ==", "illegal base64 data at input byte 4"),
    ],
)  # fmt: skip
def test_base64_errors(text: str, error: str | None) -> None:
    assert scalars.base64_error(text) == error


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("2024-01-02T03:04:05Z", None),
        ("2024-01-02T03:04:05.123+01:00", None),
        ("abc", 'parsing time "abc" as "2006-01-02T15:04:05Z07:00": cannot parse "abc" as "2006"'),
        ("2024-01-02 03:04:05Z", 'parsing time "2024-01-02 03:04:05Z" as '
         '"2006-01-02T15:04:05Z07:00": cannot parse " 03:04:05Z" as "T"'),
        ("2024-13-01T00:00:00Z", 'parsing time "2024-13-01T00:00:00Z": month out of range'),
        ("2023-02-29T00:00:00Z", 'parsing time "2023-02-29T00:00:00Z": day out of range'),
        ("2024-01-01T00:00:00Zx", 'parsing time "2024-01-01T00:00:00Zx": extra text: "x"'),
    ],
)  # fmt: skip
def test_time_errors(text: str, error: str | None) -> None:
    assert scalars.time_error(text) == error


def test_depth_scan_skips_strings() -> None:
    assert decodeerrors.json_depth(b'{"a":["[[{",{"b":"\\"]"}]}') == (3, "")
    assert decodeerrors.json_depth(b"[" * 10001 + b"]" * 10001) == (10001, "[")


def test_names_match_whole_pattern() -> None:
    assert names.subdomain_errors("a\n") == [names.SUBDOMAIN_MESSAGE]
    assert names.label_errors("a\n") == [names.LABEL_MESSAGE]
    assert not names.is_subdomain("a\n")
    assert not names.is_dns1035("a\n")


def test_kind_decoded_by_schema() -> None:
    catalogue = build_builtin_catalogue()
    info = catalogue.lookup_kind("apps", "v1", "Deployment")
    assert info is not None
    assert decoding.builtin(info)
    body: dict[str, Any] = {
        "metadata": {"name": "x", "labels": None, "unknown": 1},
        "spec": {"replicas": None, "paused": False, "template": {"spec": {"containers": [None]}}},
        "bogus": {"a": 1},
    }
    decoding.check(info, body)
    assert body == {
        "metadata": {"name": "x"},
        "spec": {"paused": False, "template": {"spec": {"containers": [{}]}}},
    }
    with pytest.raises(
        decoding.DecodeError, match=r"PodSpec\.spec\.template\.spec\.containers of type"
    ):
        decoding.check(info, {"spec": {"template": {"spec": {"containers": ["c"]}}}})
