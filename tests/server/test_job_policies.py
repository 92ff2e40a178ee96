# ruff: noqa: E501  (kube's expected texts are kept whole, one per line)
"""A Job's policies over HTTP (pkg/apis/batch/validation validateJobSpec): podFailurePolicy,
successPolicy, backoffLimitPerIndex / maxFailedIndexes limits, managedBy, podReplacementPolicy,
and their immutability; kube's 422 text, nothing stored."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from harness import Server

JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
POD = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
PREFIX = 'Job.batch "j" is invalid: '


def job(**spec: Any) -> dict[str, Any]:
    body = {"template": {"spec": copy.deepcopy(POD)}, **spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": body}


def failure(*rules: Any) -> dict[str, Any]:
    return {"rules": list(rules)}


def exits(operator: str | None, values: Any, **more: Any) -> dict[str, Any]:
    req: dict[str, Any] = {"values": values, **more}
    if operator is not None:
        req["operator"] = operator
    return req


INDEXED = {"completionMode": "Indexed", "completions": 5, "parallelism": 5}
RULE0 = "spec.podFailurePolicy.rules[0]"

INVALID = [
    (
        job(podFailurePolicy=failure({"action": "Bad", "onExitCodes": exits("In", [1])})),
        f'{RULE0}.action: Unsupported value: "Bad": supported values: "Count", "FailIndex", "FailJob", "Ignore"',
    ),
    (
        job(
            podFailurePolicy=failure(
                {"onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]}
            )
        ),
        f'[{RULE0}.action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"], '
        f'{RULE0}.onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"]',
    ),
    (
        job(podFailurePolicy=failure({"action": "FailIndex", "onExitCodes": exits("In", [1])})),
        f'{RULE0}.action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set',
    ),
    (
        job(podFailurePolicy=failure({"action": "FailJob", "onExitCodes": exits(None, [2, 1, 1])})),
        f'[{RULE0}.onExitCodes.operator: Required value: valid values: ["In" "NotIn"], '
        f"{RULE0}.onExitCodes.values[2]: Duplicate value: 1, "
        f"{RULE0}.onExitCodes.values: Invalid value: [2,1,1]: must be ordered]",
    ),
    (
        job(
            podFailurePolicy=failure(
                {"action": "FailJob", "onExitCodes": exits("In", [0, 1], containerName="x")}
            )
        ),
        f'[{RULE0}.onExitCodes.containerName: Invalid value: "x": must be one of the container or initContainer names in the pod template, '
        f"{RULE0}.onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator]",
    ),
    (
        job(podFailurePolicy=failure({"action": "Ignore", "onExitCodes": exits("NotIn", [])})),
        f"{RULE0}.onExitCodes.values: Invalid value: []: at least one value is required",
    ),
    (
        job(podFailurePolicy=failure({"action": "Ignore"})),
        f"{RULE0}: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
    ),
    (
        job(
            podFailurePolicy=failure(
                {
                    "action": "Count",
                    "onExitCodes": exits("NotIn", [0]),
                    "onPodConditions": [{"type": "bad type", "status": "True"}],
                }
            )
        ),
        f"[{RULE0}.onPodConditions[0].type: Invalid value: \"bad type\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), "
        f"{RULE0}: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported]",
    ),
    (
        job(
            podFailurePolicy=failure(*[{"action": "Ignore", "onExitCodes": exits("In", [1])}] * 21)
        ),
        "spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items",
    ),
    (
        {
            **job(podFailurePolicy=failure({"action": "Ignore", "onExitCodes": exits("In", [1])})),
            "spec": {
                "podFailurePolicy": failure({"action": "Ignore", "onExitCodes": exits("In", [1])}),
                "template": {"spec": {**POD, "restartPolicy": "OnFailure"}},
            },
        },
        'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified',
    ),
    (
        job(successPolicy={"rules": [{"succeededCount": 1}]}),
        'spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode',
    ),
    (
        job(
            **INDEXED, successPolicy={"rules": [{"succeededIndexes": "0-2,1", "succeededCount": 4}]}
        ),
        '[spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-2,1": error parsing succeededIndexes: non-increasing order, previous: 2, current: 1, '
        "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)]",
    ),
    (
        job(
            **INDEXED,
            successPolicy={"rules": [{"succeededIndexes": "1-x"}, {"succeededIndexes": "7"}]},
        ),
        '[spec.successPolicy.rules[0].succeededIndexes: Invalid value: "1-x": error parsing succeededIndexes: cannot convert string to integer for index: "x", '
        'spec.successPolicy.rules[1].succeededIndexes: Invalid value: "7": error parsing succeededIndexes: too large index: "7"]',
    ),
    (
        job(**INDEXED, successPolicy={"rules": []}),
        "spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified",
    ),
    (
        job(**INDEXED, successPolicy={"rules": [{}]}),
        "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
    ),
    (
        job(**INDEXED, successPolicy={"rules": [{"succeededCount": 6}]}),
        "spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
    ),
    (
        job(podReplacementPolicy="Bad"),
        'spec.podReplacementPolicy: Unsupported value: "Bad": supported values: "Failed", "TerminatingOrFailed"',
    ),
    (
        job(
            podReplacementPolicy="TerminatingOrFailed",
            podFailurePolicy=failure({"action": "Ignore", "onExitCodes": exits("In", [1])}),
        ),
        'spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"',
    ),
    (
        job(managedBy="kueue"),
        'spec.managedBy: Invalid value: "kueue": must be a domain-prefixed path (such as "acme.io/foo")',
    ),
    (
        job(managedBy="example.com/" + "a" * 60),
        "spec.managedBy: Too long: may not be more than 63 bytes",
    ),
    (
        job(managedBy="example.com/a b"),
        "spec.managedBy: Invalid value: \"a b\": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
    ),
    (
        job(completionMode="Indexed", completions=2, backoffLimitPerIndex=1, maxFailedIndexes=3),
        "spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions",
    ),
    (
        job(completionMode="Indexed", completions=5, parallelism=100001),
        "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed",
    ),
    (
        job(
            completionMode="Indexed", completions=100001, parallelism=10001, backoffLimitPerIndex=1
        ),
        "[spec.maxFailedIndexes: Required value: must be specified when completions is above 100000, "
        "spec.parallelism: Invalid value: 10001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index]",
    ),
    (
        job(backoffLimitPerIndex=1),
        "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
    ),
]


@pytest.mark.parametrize(("body", "message"), INVALID)
def test_invalid_job_policy(server: Server, body: Any, message: str) -> None:
    code, status = server.request("POST", JOBS, body)
    assert (code, status["reason"], status["message"]) == (422, "Invalid", PREFIX + message)
    code, _ = server.request("GET", f"{JOBS}/j")
    assert code == 404


def test_valid_job_policies_and_their_immutability(server: Server) -> None:
    body = job(
        completionMode="Indexed",
        completions=5,
        parallelism=2,
        backoffLimitPerIndex=1,
        maxFailedIndexes=2,
        managedBy="example.com/controller",
        podFailurePolicy=failure(
            {"action": "FailIndex", "onExitCodes": exits("In", [1, 2], containerName="c")},
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
        ),
        successPolicy={"rules": [{"succeededIndexes": "0-2,4", "succeededCount": 3}]},
        podReplacementPolicy="Failed",
    )
    code, made = server.request("POST", JOBS, body)
    assert code == 201, made
    for field, value in [
        ("backoffLimitPerIndex", 2),
        ("managedBy", "example.com/other"),
        ("successPolicy", {"rules": [{"succeededCount": 2}]}),
    ]:
        changed = copy.deepcopy(made)
        changed["spec"][field] = value
        code, status = server.request("PUT", f"{JOBS}/j", changed)
        assert code == 422, status
        shown = (
            f'"{value}"'
            if isinstance(value, str)
            else ('{"rules":[{"succeededCount":2}]}' if isinstance(value, dict) else value)
        )
        assert (
            status["message"] == f"{PREFIX}spec.{field}: Invalid value: {shown}: field is immutable"
        )
