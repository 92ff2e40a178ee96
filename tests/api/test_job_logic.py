"""The Job controller's pure logic (pkg/controller/job: indexed_job_utils.go, backoff_utils.go,
pod_failure_policy.go, success_policy.go) and printJob's columns, without a server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubelite.api.controllers import jobindexes as ix
from kubelite.api.controllers.jobfailurepolicy import match
from kubelite.api.controllers.jobtracking import BackoffRecord, ensure_condition
from kubelite.server.table import job_completions, job_duration, job_status

Obj = dict[str, Any]


def test_indexes_parse_merge_and_format() -> None:
    assert ix.parse_indexes("0-2,4,x,7-5,9", 8) == [(0, 2), (4, 4)]
    assert ix.parse_indexes("3,4,5-9", 7) == [(3, 6)]
    merged = ix.with_indexes([(0, 1), (5, 5)], [2, 4, 7])
    assert merged == [(0, 2), (4, 5), (7, 7)]
    assert ix.format_indexes(merged) == "0-2,4-5,7"
    assert ix.total(merged) == 6
    assert ix.first_pending(merged, busy=[3], count=2, completions=10) == [6, 8]
    assert ix.generate_name("j" * 60, 12) == "j" * 54 + "-12-"


def test_success_policy_rules() -> None:
    done = [(0, 2), (5, 5)]
    rules = {
        "rules": [{"succeededIndexes": "3-4"}, {"succeededIndexes": "1-3,5", "succeededCount": 3}]
    }
    assert ix.match_success_policy(rules, 6, done) == "Matched rules at index 1"
    assert ix.match_success_policy({"rules": [{"succeededCount": 5}]}, 6, done) is None
    assert ix.match_success_policy({"rules": [{"succeededIndexes": "0-2"}]}, 6, done) == (
        "Matched rules at index 0"
    )


def _failed_pod(code: int, conditions: list[Obj] | None = None) -> Obj:
    return {
        "metadata": {"namespace": "ns", "name": "p"},
        "status": {
            "phase": "Failed",
            "conditions": conditions or [],
            "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": code}}}],
        },
    }


def test_pod_failure_policy_rules_in_order() -> None:
    policy = {
        "rules": [
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
            {
                "action": "Count",
                "onExitCodes": {"containerName": "c", "operator": "In", "values": [1]},
            },
        ]
    }
    assert match(policy, _failed_pod(2)) == (None, True, None)  # no rule: counts
    assert match(policy, _failed_pod(1)) == (None, True, "Count")
    assert match(policy, _failed_pod(7)) == (
        "Container c for pod ns/p failed with exit code 7 matching FailJob rule at index 1",
        True,
        "FailJob",
    )
    disrupted = _failed_pod(7, [{"type": "DisruptionTarget", "status": "True"}])
    assert match(policy, disrupted) == (None, False, "Ignore")
    assert match(None, disrupted) == (None, True, None)


def test_backoff_doubles_from_10s_to_10min_and_resets_on_success() -> None:
    def pod(finished: str, phase: str = "Failed") -> Obj:
        state = {"terminated": {"exitCode": 1, "finishedAt": finished}}
        return {"metadata": {}, "status": {"phase": phase, "containerStatuses": [{"state": state}]}}

    t0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    record = BackoffRecord().advanced([], [pod("2026-01-01T00:00:00Z")])
    assert record == BackoffRecord(1, t0)
    assert record.remaining(t0 + 4) == 6.0
    assert record.remaining(t0 + 4, scale=0.01) == 0.0
    record = record.advanced([], [pod("2026-01-01T00:00:00Z")] * 2)
    assert record.remaining(t0) == 40.0
    assert BackoffRecord(20, t0).remaining(t0) == 600.0
    after_success = record.advanced([pod("2026-01-01T00:01:00Z", "Succeeded")], [])
    assert after_success == BackoffRecord(0, None)
    assert after_success.remaining(t0) == 0.0


def test_conditions_keep_their_time_unless_they_change() -> None:
    conditions: list[Obj] = []
    assert not ensure_condition(conditions, "Suspended", "False", "JobResumed", "Job resumed")
    assert ensure_condition(conditions, "Suspended", "True", "JobSuspended", "Job suspended")
    first = dict(conditions[0])
    assert not ensure_condition(conditions, "Suspended", "True", "JobSuspended", "Job suspended")
    assert conditions == [first]
    assert ensure_condition(conditions, "Suspended", "False", "JobResumed", "Job resumed")
    assert [c["status"] for c in conditions] == ["False"]


def test_print_job_columns() -> None:
    def job(conditions: list[str], **spec: Any) -> Obj:
        status = {"conditions": [{"type": t, "status": "True"} for t in conditions]}
        return {"metadata": {}, "spec": spec, "status": status}

    assert job_status(job([])) == "Running"
    assert job_status(job(["SuccessCriteriaMet", "Complete"])) == "Complete"
    assert job_status(job(["FailureTarget"])) == "FailureTarget"
    assert job_status(job(["Suspended", "FailureTarget"])) == "Suspended"
    terminating = job(["Suspended"])
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert job_status(terminating) == "Terminating"
    assert job_completions(job([], completions=3)) == "0/3"
    assert job_completions(job([], parallelism=4)) == "0/1 of 4"
    assert job_completions(job([], parallelism=1)) == "0/1"
    now = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    started = {"status": {"startTime": "2026-01-01T00:00:00Z"}}
    assert job_duration(started, now) == "5m"
    done = {
        "status": {"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:00:07Z"}
    }
    assert job_duration(done, now) == "7s"
    assert job_duration({"status": {}}, now) == ""
