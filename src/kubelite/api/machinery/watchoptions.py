"""The options of a watch request, checked as kube-apiserver checks them (k8s.io/apiserver
``pkg/registry/generic/registry/store.go`` and ``pkg/apis/meta/internalversion/validation``'s
validateWatchOptions): ``sendInitialEvents`` parsed as Go's strconv.ParseBool, the 422 for an
invalid combination, and the 410 a watch gets for a revision the store no longer holds."""

from __future__ import annotations

from kubelite.api import errors
from kubelite.api.errors import APIError, Cause

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def too_old(requested: int, oldest: int) -> APIError:
    """The 410 a watch gets for a revision it can no longer be served from; the HTTP layer
    writes it as ``{"type":"ERROR","object":<Status>}``."""
    return errors.expired(f"too old resource version: {requested} ({oldest})")


def validate_watch_options(
    send_initial_events: bool | None,
    resource_version_match: str,
    *,
    continue_token: str = "",
    watch_list_enabled: bool = True,
) -> None:
    """kube-apiserver's validateWatchOptions: raises the 422 for an invalid combination of
    ``sendInitialEvents`` and ``resourceVersionMatch`` on a watch (api-semantics.md §7)."""
    causes: list[Cause] = []

    def forbid(field: str, detail: str) -> None:
        causes.append(Cause("FieldValueForbidden", f"Forbidden: {detail}", field))

    match = resource_version_match
    if send_initial_events is not None:
        if match != "NotOlderThan":
            forbid(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        if not watch_list_enabled:
            forbid(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is "
                "enabled",
            )
    if match:
        if send_initial_events is None:
            forbid(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )
        if match != "NotOlderThan":
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{match}": supported values: "NotOlderThan"',
                    "resourceVersionMatch",
                )
            )
        if continue_token:
            forbid(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            )
    if causes:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)


def parse_send_initial_events(value: str | None) -> bool | None:
    """The ``sendInitialEvents`` query parameter: absent is None (not False)."""
    if value is None:
        return None
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')
