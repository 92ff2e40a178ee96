"""kopf as a service account with exactly the RBAC kopf's documentation lists
(docs/deployment-rbac.yaml: a ClusterRole to watch its resources, CRDs and namespaces
cluster-wide, and a Role to patch its resources and post events in its namespace), the example's
``kopf.dev``/``kopfexamples`` replaced by the Widget CRD. Before the RBAC is applied kopf is
refused; with it, the operator handles create, update and delete as it does as administrator.

The Widget CRD here has no status subresource: kopf patches ``/status`` when there is one, and
the documented Role grants no ``widgets/status`` (on a cluster too).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from harness import Server
from test_kopf import CRD_FILE, OPERATOR, exercise

ACCOUNT = "kopfexample-account"
RBAC = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kopfexample-role-cluster
rules:
  - apiGroups: [kopf.dev]
    resources: [clusterkopfpeerings]
    verbs: [list, watch, patch, get]
  - apiGroups: [apiextensions.k8s.io]
    resources: [customresourcedefinitions]
    verbs: [list, watch]
  - apiGroups: [""]
    resources: [namespaces]
    verbs: [list, watch]
  - apiGroups: [admissionregistration.k8s.io/v1, admissionregistration.k8s.io/v1beta1]
    resources: [validatingwebhookconfigurations, mutatingwebhookconfigurations]
    verbs: [create, patch]
  - apiGroups: [example.com]
    resources: [widgets]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  namespace: default
  name: kopfexample-role-namespaced
rules:
  - apiGroups: [kopf.dev]
    resources: [kopfpeerings]
    verbs: [list, watch, patch, get]
  - apiGroups: [""]
    resources: [events]
    verbs: [create]
  - apiGroups: [example.com]
    resources: [widgets]
    verbs: [list, watch, patch]
  - apiGroups: [batch, extensions]
    resources: [jobs]
    verbs: [create]
  - apiGroups: [""]
    resources: [pods, persistentvolumeclaims]
    verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kopfexample-rolebinding-cluster
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kopfexample-role-cluster
subjects:
  - kind: ServiceAccount
    name: {ACCOUNT}
    namespace: default
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  namespace: default
  name: kopfexample-rolebinding-namespaced
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: kopfexample-role-namespaced
subjects:
  - kind: ServiceAccount
    name: {ACCOUNT}
"""


def account_kubeconfig(server: Server, tmp_path: Path) -> Path:
    """A kubeconfig holding a token of the service account (``kubectl create token``)."""
    token = server.kubectl("create", "token", ACCOUNT, "--duration=1h").stdout.strip()
    config = json.loads(server.kubeconfig.read_text())
    config["users"] = [{"name": ACCOUNT, "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = ACCOUNT
    path = tmp_path / "kopf.kubeconfig"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.fresh_server  # the example's ClusterRole and ClusterRoleBinding, for default's account
def test_kopf_runs_as_a_service_account_with_the_rbac_its_docs_list(
    server: Server, tmp_path: Path
) -> None:
    crd = yaml.safe_load(CRD_FILE.read_text())
    for version in crd["spec"]["versions"]:
        version.pop("subresources", None)
    server.kubectl("apply", "-f", "-", input=json.dumps(crd))
    server.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
    server.kubectl("create", "serviceaccount", ACCOUNT)
    kubeconfig = account_kubeconfig(server, tmp_path)
    env = {**server.kubectl_env(), "KUBECONFIG": str(kubeconfig)}
    denied = server.kubectl("get", "widgets", "-A", check=False, env=env)
    assert (
        f'User "system:serviceaccount:default:{ACCOUNT}" cannot list resource "widgets" in API '
        'group "example.com" at the cluster scope'
    ) in denied.stderr
    server.kubectl("apply", "-f", "-", input=RBAC)
    log = tmp_path / "kopf.log"
    with log.open("wb") as out:
        kopf = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--standalone", "-A", str(OPERATOR)],
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        exercise(server, log)
        text = log.read_text()
        assert "Forbidden" not in text, text[-3000:]
        # a 403 as kopf logs one ("APIForbiddenError: (403, ...)", "403 Forbidden"), not the
        # milliseconds of a log line's timestamp (",403")
        assert re.search(r"(?<![,\d])403\b", text) is None, text[-3000:]
    finally:
        kopf.send_signal(signal.SIGTERM)
        try:
            kopf.wait(timeout=20)
        except subprocess.TimeoutExpired:
            kopf.kill()
            kopf.wait()
