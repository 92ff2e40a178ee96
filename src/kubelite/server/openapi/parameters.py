"""The query parameters kube-apiserver declares on each operation (names, types and its
description texts), and the content types operations consume and produce."""

from __future__ import annotations

# --- parameters -----------------------------------------------------------------------------

_DRY_RUN = (
    "When present, indicates that modifications should not be persisted. An invalid or "
    "unrecognized dryRun directive will result in an error response and no further processing "
    "of the request. Valid values are: - All: all dry run stages will be processed"
)
_FIELD_VALIDATION = (
    "fieldValidation instructs the server on how to handle objects in the request "
    "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This "
    "will ignore any unknown fields that are silently dropped from the object, and will ignore "
    "all but the last duplicate field that the decoder encounters. - Warn: This will send a "
    "warning via the standard warning response header for each unknown field that is dropped "
    "from the object, and for each duplicate field that is encountered. The request will still "
    "succeed if there are no other errors, and will only persist the last of any duplicate "
    "fields. This is the default. - Strict: This will fail the request with a BadRequest error "
    "if any unknown fields would be dropped from the object, or if any duplicate fields are "
    "present. The error returned from the server will contain all unknown and duplicate fields "
    "encountered."
)

#: Query parameters: name -> (type, description), kube-apiserver's.
QUERY: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": (
        "boolean",
        'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not '
        "implement bookmarks may ignore this flag and bookmarks are sent at the server's "
        "discretion.",
    ),
    "continue": (
        "string",
        "The continue option should be set when retrieving more results from the server. Since "
        "this value is server defined, clients may only use the continue value from a previous "
        "query result with identical query parameters (except for the value of continue).",
    ),
    "dryRun": ("string", _DRY_RUN),
    "fieldManager": (
        "string",
        "fieldManager is a name associated with the actor or entity that is making these "
        "changes. The value must be less than or 128 characters long, and only contain "
        "printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
    ),
    "fieldSelector": (
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to "
        "everything.",
    ),
    "fieldValidation": ("string", _FIELD_VALIDATION),
    "force": (
        "boolean",
        'Force is going to "force" Apply requests. It means user will re-acquire conflicting '
        "fields owned by other people. Force flag must be unset for non-apply patch requests.",
    ),
    "gracePeriodSeconds": (
        "integer",
        "The duration in seconds before the object should be deleted. Value must be "
        "non-negative integer. The value zero indicates delete immediately. If this value is "
        "nil, the default grace period for the specified type will be used. Defaults to a per "
        "object value if not specified. zero means delete immediately.",
    ),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal "
        "deletion flow fails with a corrupt object error.",
    ),
    "labelSelector": (
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to "
        "everything.",
    ),
    "limit": (
        "integer",
        "limit is a maximum number of responses to return for a list call. If more items "
        "exist, the server will set the `continue` field on the list metadata to a value that "
        "can be used with the same initial query to retrieve the next set of results.",
    ),
    "orphanDependents": (
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. "
        'Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will '
        "be added to/removed from the object's finalizers list. Either this field or "
        "PropagationPolicy may be set, but not both.",
    ),
    "pretty": (
        "string",
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the "
        "user-agent indicates a browser or command-line HTTP tool (curl and wget).",
    ),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection will be performed. Either this field or "
        "OrphanDependents may be set, but not both. Acceptable values are: 'Orphan' - orphan "
        "the dependents; 'Background' - allow the garbage collector to delete the dependents in "
        "the background; 'Foreground' - a cascading policy that deletes all dependents in the "
        "foreground.",
    ),
    "resourceVersion": (
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served "
        "from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions "
        "for details. Defaults to unset",
    ),
    "resourceVersionMatch": (
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is "
        "highly recommended that resourceVersionMatch be set for list calls where "
        "resourceVersion is set. Defaults to unset",
    ),
    "sendInitialEvents": (
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the "
        "watch stream will begin with synthetic events to produce the current state of objects "
        'in the collection. Once all such events have been sent, a synthetic "Bookmark" event '
        "will be sent.",
    ),
    "timeoutSeconds": (
        "integer",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of "
        "any activity or inactivity.",
    ),
    "watch": (
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, "
        "update, and remove notifications. Specify resourceVersion.",
    ),
}

LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
PATCH_PARAMS = (*WRITE_PARAMS, "force")
DELETE_PARAMS = (
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
)
DELETE_COLLECTION_PARAMS = (
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
)

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
CUSTOM_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
PRODUCES = ("application/json", "application/yaml")
WATCH_PRODUCES = (*PRODUCES, "application/json;stream=watch")
