"""go-cmp's cmp.Diff report (godiff) for kube's internal pod spec: the layouts kube prints for a
changed element of a list, a changed pointer to a struct, and long strings."""

from __future__ import annotations

from typing import Any

from kubelite.api.kinds.core.validation import podtypes
from kubelite.api.kinds.validation import godiff

BASE: dict[str, Any] = {
    "containers": [{"name": "c", "image": "nginx", "command": ["sleep", "1"]}],
    "securityContext": {},
}


def _diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    x, y = podtypes.internal_spec(old), podtypes.internal_spec(new)
    t = podtypes.resolve(podtypes.POD_SPEC, [x, y])
    return godiff.diff(t, podtypes.value(t, x), podtypes.value(t, y))


def test_a_changed_element_expands_its_list() -> None:
    new = {**BASE, "containers": [{**BASE["containers"][0], "command": ["sleep", "2"]}]}
    assert _diff(BASE, new) == (
        "  core.PodSpec{\n"
        "  \tVolumes:        nil,\n"
        "  \tInitContainers: nil,\n"
        "  \tContainers: []core.Container{\n"
        "  \t\t{\n"
        '  \t\t\tName:  "c",\n'
        '  \t\t\tImage: "nginx",\n'
        "  \t\t\tCommand: []string{\n"
        '  \t\t\t\t"sleep",\n'
        '- \t\t\t\t"1",\n'
        '+ \t\t\t\t"2",\n'
        "  \t\t\t},\n"
        "  \t\t\tArgs:       nil,\n"
        '  \t\t\tWorkingDir: "",\n'
        "  \t\t\t... // 20 identical fields\n"
        "  \t\t},\n"
        "  \t},\n"
        "  \tEphemeralContainers: nil,\n"
        '  \tRestartPolicy:       "",\n'
        "  \t... // 31 identical fields\n"
        "  }\n"
    )


def test_a_changed_pointer_to_a_struct_names_its_type() -> None:
    new = {**BASE, "securityContext": {"runAsUser": 1000}}
    text = _diff(BASE, new)
    assert (
        "  \tSecurityContext: &core.PodSecurityContext{\n"
        "  \t\t... // 5 identical fields\n"
        "  \t\tSELinuxOptions: nil,\n"
        "  \t\tWindowsOptions: nil,\n"
        "- \t\tRunAsUser:      nil,\n"
        "+ \t\tRunAsUser:      &1000,\n"
        "  \t\tRunAsGroup:     nil,\n"
        "  \t\tRunAsNonRoot:   nil,\n"
        "  \t\t... // 8 identical fields\n"
        "  \t},\n"
    ) in text


def test_equal_specs_have_no_diff_and_long_context_strings_are_cut() -> None:
    assert _diff(BASE, BASE) == ""
    long = "x" * 70
    old = {**BASE, "nodeName": "a", "serviceAccountName": long}
    new = {**old, "nodeName": "b"}
    assert f'  \tServiceAccountName:           "{"x" * 64}"...,\n' in _diff(old, new)
