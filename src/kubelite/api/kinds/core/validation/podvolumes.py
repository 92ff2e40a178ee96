"""Validation: a pod spec's ``volumes`` (a container's ``volumeMounts``: :mod:`podmounts`).

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go`` (``ValidateVolumes``,
``validateVolumeSource`` and each source's validator: ``validateHostPathVolumeSource``,
``validateSecretVolumeSource``, ``validateConfigMapVolumeSource``, ``validateKeyToPath``,
``validateDownwardAPIVolumeSource``, ``validateProjectionSources``, ``validateNFSVolumeSource``,
``validateISCSIVolumeSource``, ``validateCSIVolumeSource``, ``validateEphemeralVolumeSource``,
``ValidatePersistentVolumeClaimSpec``, ``validateImageVolumeSource`` ...).
"""

from __future__ import annotations

from typing import Any

from kubelite.api.encoding.quantity import parse_or_none
from kubelite.api.errors import Cause, go_quote
from kubelite.api.kinds.core.validation.podcommon import (
    label_causes,
    local_descending_path,
    local_non_reserved_path,
    mode_causes,
    no_backsteps,
    subdomain_causes,
)
from kubelite.api.kinds.core.validation.podenv import (
    VOLUME_FIELD_PATHS,
    object_field_selector_causes,
    resource_field_selector_causes,
)
from kubelite.api.kinds.validation.fields import (
    Typed,
    as_dict,
    as_int,
    as_list,
    as_str,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    selector_causes,
)
from kubelite.api.machinery.metavalidation import annotation_causes, subdomain_errors
from kubelite.api.machinery.metavalidation import label_causes as labels_causes

Obj = dict[str, Any]

#: validateVolumeSource's order: each source's key, the path "more than 1 volume type" names
#: (kube's own spelling, ``downwarAPI`` included) and the path its validator is given.
_VOLUME_SOURCES = (
    ("emptyDir", "emptyDir", "emptyDir"),
    ("hostPath", "hostPath", "hostPath"),
    ("gitRepo", "gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret", "secret"),
    ("nfs", "nfs", "nfs"),
    ("iscsi", "iscsi", "iscsi"),
    ("glusterfs", "glusterfs", "glusterfs"),
    ("flocker", "flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd", "rbd"),
    ("cinder", "cinder", "cinder"),
    ("cephfs", "cephFS", "cephfs"),
    ("quobyte", "quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI", "downwardAPI"),
    ("fc", "fc", "fc"),
    ("flexVolume", "flexVolume", "flexVolume"),
    ("configMap", "configMap", "configMap"),
    ("azureFile", "azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk", "azureDisk"),
    ("storageos", "storageos", "storageos"),
    ("projected", "projected", "projected"),
    ("scaleIO", "scaleIO", "scaleIO"),
    ("csi", "csi", "csi"),
    ("ephemeral", "ephemeral", "ephemeral"),
    ("image", "image", "image"),
)

#: The sources whose validators only require fields (in their order).
_REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "gitRepo": ("repository",),
    "gcePersistentDisk": ("pdName",),
    "awsElasticBlockStore": ("volumeID",),
    "glusterfs": ("endpoints", "path"),
    "persistentVolumeClaim": ("claimName",),
    "rbd": ("monitors", "image"),
    "cinder": ("volumeID",),
    "cephfs": ("monitors",),
    "flexVolume": ("driver",),
    "azureFile": ("secretName", "shareName"),
    "vsphereVolume": ("volumePath",),
    "photonPersistentDisk": ("pdID",),
    "portworxVolume": ("volumeID",),
    "azureDisk": ("diskName", "diskURI"),
    "scaleIO": ("gateway", "system", "volumeName"),
}

#: supportedHostPathTypes, sorted.
_HOST_PATH_TYPES = [
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
]
_ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_ONE_TYPE = "may not specify more than 1 volume type"


def _required_fields(source: Obj, fields: tuple[str, ...], path: str) -> list[Cause]:
    return [required(f"{path}.{name}") for name in fields if not source.get(name)]


def _partition_causes(source: Obj, path: str) -> list[Cause]:
    """gcePersistentDisk / awsElasticBlockStore: a partition 0 through 255 (pdPartitionErrorMsg
    says 1 through 255)."""
    partition = as_int(source.get("partition"))
    if partition is not None and not 0 <= partition <= 255:
        return [invalid(f"{path}.partition", partition, "must be between 1 and 255, inclusive")]
    return []


def _key_to_path_causes(item: Any, path: str) -> list[Cause]:
    """validateKeyToPath: a key, a local path, a file mode."""
    kp = as_dict(item)
    key, target = as_str(kp.get("key")), as_str(kp.get("path"))
    causes = [required(f"{path}.key")] if not key else []
    if not target:
        causes.append(required(f"{path}.path"))
    causes += local_non_reserved_path(target, f"{path}.path")
    return causes + mode_causes(kp.get("mode"), f"{path}.mode")


def _items_causes(source: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for index, item in enumerate(as_list(source.get("items"))):
        causes += _key_to_path_causes(item, f"{path}.items[{index}]")
    return causes


def _downward_file_causes(item: Any, path: str) -> list[Cause]:
    """validateDownwardAPIVolumeFile (``path`` is the source's path: kube indexes no item)."""
    file = as_dict(item)
    target = as_str(file.get("path"))
    causes = [required(f"{path}.path")] if not target else []
    causes += local_non_reserved_path(target, f"{path}.path")
    if file.get("fieldRef") is not None:
        causes += object_field_selector_causes(
            file["fieldRef"], VOLUME_FIELD_PATHS, f"{path}.fieldRef"
        )
        if file.get("resourceFieldRef") is not None:
            detail = "fieldRef and resourceFieldRef can not be specified simultaneously"
            causes.append(invalid(path, "resource", detail))
    elif file.get("resourceFieldRef") is not None:
        causes += resource_field_selector_causes(
            file["resourceFieldRef"], f"{path}.resourceFieldRef", volume=True
        )
    else:
        causes.append(required(path, "one of fieldRef and resourceFieldRef is required"))
    return causes + mode_causes(file.get("mode"), f"{path}.mode")


def _projection_causes(projected: Obj, path: str) -> list[Cause]:
    """validateProjectionSources: one source per entry, each valid, no path twice."""
    causes: list[Cause] = []
    paths: set[str] = set()

    def claim(target: str, shown: str) -> None:
        if target in paths:
            causes.append(invalid(path, shown, "conflicting duplicate paths"))
        paths.add(target)

    for index, raw in enumerate(as_list(projected.get("sources"))):
        source, where = as_dict(raw), f"{path}.sources[{index}]"
        count = 0
        for kind in ("secret", "configMap"):
            if source.get(kind) is None:
                continue
            count += 1
            ref = as_dict(source[kind])
            if not as_str(ref.get("name")):
                causes.append(required(f"{where}.{kind}.name"))
            for i, item in enumerate(as_list(ref.get("items"))):
                causes += _key_to_path_causes(item, f"{where}.{kind}.items[{i}]")
                target = as_str(as_dict(item).get("path"))
                if target:
                    claim(target, as_str(ref.get("name")))
        if source.get("downwardAPI") is not None:
            count += 1
            for item in as_list(as_dict(source["downwardAPI"]).get("items")):
                causes += _downward_file_causes(item, f"{where}.downwardAPI")
                target = as_str(as_dict(item).get("path"))
                if target:
                    claim(target, target)
        if source.get("serviceAccountToken") is not None:
            count += 1
            causes += _token_causes(as_dict(source["serviceAccountToken"]), where, path)
        if source.get("clusterTrustBundle") is not None:
            count += 1
            bundle = as_dict(source["clusterTrustBundle"])
            causes += _trust_bundle_causes(bundle, f"{where}.clusterTrustBundle")
            claim(as_str(bundle.get("path")), as_str(bundle.get("path")))
        if count > 1:
            causes.append(forbidden(where, "may not specify more than 1 volume type per source"))
    return causes


def _token_causes(token: Obj, where: str, path: str) -> list[Cause]:
    """A serviceAccountToken projection: 10 minutes to 2^32 seconds, a local path (kube names
    the projected volume's ``path`` for it, not the source's)."""
    causes: list[Cause] = []
    seconds = as_int(token.get("expirationSeconds"))
    at = f"{where}.serviceAccountToken.expirationSeconds"
    if seconds is not None and seconds < 600:
        causes.append(invalid(at, seconds, "may not specify a duration less than 10 minutes"))
    if seconds is not None and seconds > 1 << 32:
        causes.append(invalid(at, seconds, "may not specify a duration larger than 2^32 seconds"))
    target = as_str(token.get("path"))
    if not target:
        causes.append(required(f"{path}.path"))
    else:
        causes += local_non_reserved_path(target, f"{path}.path")
    return causes


def _trust_bundle_causes(bundle: Obj, path: str) -> list[Cause]:
    """A clusterTrustBundle projection: a name or a signerName (with a selector), a path."""
    causes: list[Cause] = []
    name, signer = bundle.get("name"), bundle.get("signerName")
    if name is not None and signer is not None:
        causes.append(invalid(path, bundle, "only one of name and signerName may be used"))
    elif name is not None:
        if not as_str(name):
            causes.append(required(f"{path}.name", "must be a valid object name"))
        if bundle.get("labelSelector") is not None:
            detail = "labelSelector must be unset if name is specified"
            causes.append(invalid(f"{path}.labelSelector", bundle["labelSelector"], detail))
    elif signer is not None:
        if not as_str(signer):
            causes.append(required(f"{path}.signerName", "must be a valid signer name"))
        causes += selector_causes(bundle.get("labelSelector"), f"{path}.labelSelector")
    else:
        causes.append(required(path, "either name or signerName must be specified"))
    target = as_str(bundle.get("path"))
    if not target:
        causes.append(required(f"{path}.path"))
    return causes + local_non_reserved_path(target, f"{path}.path")


def _claim_template_causes(template: Any, path: str) -> list[Cause]:
    """ValidatePersistentVolumeClaimTemplate: labels, annotations, the basics of the spec."""
    tmpl = as_dict(template)
    meta, spec = as_dict(tmpl.get("metadata")), as_dict(tmpl.get("spec"))
    causes = annotation_causes(meta.get("annotations"), f"{path}.metadata.annotations")
    causes += labels_causes(meta.get("labels"), f"{path}.metadata.labels")
    at = f"{path}.spec"
    modes = [m for m in as_list(spec.get("accessModes")) if isinstance(m, str)]
    if not as_list(spec.get("accessModes")):
        causes.append(required(f"{at}.accessModes", "at least 1 access mode is required"))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            causes.append(not_supported(f"{at}.accessModes", Typed(mode), _ACCESS_MODES))
    others = [m for m in modes if m in _ACCESS_MODES and m != "ReadWriteOncePod"]
    if "ReadWriteOncePod" in modes and others:
        detail = "may not use ReadWriteOncePod with other access modes"
        causes.append(forbidden(f"{at}.accessModes", detail))
    requests = as_dict(as_dict(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        causes.append(required(f"{at}.resources[storage]"))
    return causes


def _source_causes(key: str, raw: Any, path: str, pod: bool) -> list[Cause]:
    """The validator of one volume source (the first one a volume gives)."""
    source = as_dict(raw)
    if key in _REQUIRED_FIELDS:
        causes = _required_fields(source, _REQUIRED_FIELDS[key], path)
        if key in ("gcePersistentDisk", "awsElasticBlockStore"):
            causes += _partition_causes(source, path)
        if key == "gitRepo":
            causes += local_descending_path(as_str(source.get("directory")), f"{path}.directory")
        return causes
    if key == "hostPath":
        target = as_str(source.get("path"))
        if not target:
            return [required(f"{path}.path")]
        causes = no_backsteps(target, f"{path}.path")
        kind = source.get("type")
        if isinstance(kind, str) and kind not in _HOST_PATH_TYPES:
            causes.append(not_supported(f"{path}.type", Typed(kind), _HOST_PATH_TYPES))
        return causes
    if key in ("secret", "configMap"):
        name_key = "secretName" if key == "secret" else "name"
        causes = [required(f"{path}.{name_key}")] if not as_str(source.get(name_key)) else []
        causes += mode_causes(source.get("defaultMode"), f"{path}.defaultMode")
        return causes + _items_causes(source, path)
    if key == "nfs":
        target = as_str(source.get("path"))
        causes = _required_fields(source, ("server", "path"), path)
        if not target.startswith("/"):
            causes.append(invalid(f"{path}.path", target, "must be an absolute path"))
        return causes
    if key == "iscsi":
        return _iscsi_causes(source, path)
    if key == "downwardAPI":
        causes = mode_causes(source.get("defaultMode"), f"{path}.defaultMode")
        for item in as_list(source.get("items")):
            causes += _downward_file_causes(item, path)
        return causes
    if key == "projected":
        causes = mode_causes(source.get("defaultMode"), f"{path}.defaultMode")
        return causes + _projection_causes(source, path)
    if key == "csi":
        return _csi_causes(source, path)
    if key == "ephemeral":
        if source.get("volumeClaimTemplate") is None:
            return [required(f"{path}.volumeClaimTemplate")]
        return _claim_template_causes(source["volumeClaimTemplate"], f"{path}.volumeClaimTemplate")
    if key == "image":
        causes = [required(f"{path}.reference")] if pod and not source.get("reference") else []
        policy = source.get("pullPolicy")
        if isinstance(policy, str) and policy and policy not in _PULL_POLICIES:
            causes.append(not_supported(f"{path}.pullPolicy", Typed(policy), _PULL_POLICIES))
        return causes
    if key == "fc" and not source.get("targetWWNs") and not source.get("wwids"):
        detail = "must specify either targetWWNs or wwids, but not both"
        return [required(f"{path}.targetWWNs", detail)]
    if key == "storageos":
        volume = as_str(source.get("volumeName"))
        if not volume:
            return [required(f"{path}.volumeName")]
        return label_causes(volume, f"{path}.volumeName")
    if key == "quobyte" and not source.get("registry"):
        detail = "must be a host:port pair or multiple pairs separated by commas"
        return [required(f"{path}.registry", detail)]
    if key == "flocker" and not source.get("datasetName") and not source.get("datasetUUID"):
        return [required(path, "one of datasetName and datasetUUID is required")]
    return []


def _iscsi_causes(source: Obj, path: str) -> list[Cause]:
    """validateISCSIVolumeSource (the target portal, an IQN prefix, the LUN, CHAP's secret)."""
    causes = _required_fields(source, ("targetPortal",), path)
    iqn = as_str(source.get("iqn"))
    if not iqn:
        causes.append(required(f"{path}.iqn"))
    elif not iqn.startswith(("iqn", "eui", "naa")):
        detail = "must be valid format starting with iqn, eui, or naa"
        causes.append(invalid(f"{path}.iqn", iqn, detail))
    lun = as_int(source.get("lun"))
    if lun is not None and not 0 <= lun <= 255:
        causes.append(invalid(f"{path}.lun", lun, "must be between 0 and 255, inclusive"))
    chap = source.get("chapAuthDiscovery") is True or source.get("chapAuthSession") is True
    if chap and source.get("secretRef") is None:
        causes.append(required(f"{path}.secretRef"))
    return causes


def _csi_causes(source: Obj, path: str) -> list[Cause]:
    """validateCSIVolumeSource: ValidateCSIDriverName, the node-publish secret's name."""
    driver = as_str(source.get("driver"))
    causes = [required(f"{path}.driver")] if not driver else []
    if len(driver) > 63:
        causes.append(
            Cause("FieldValueTooLong", "Too long: may not be more than 63 bytes", f"{path}.driver")
        )
    causes += [invalid(f"{path}.driver", driver, m) for m in subdomain_errors(driver.lower())]
    secret = source.get("nodePublishSecretRef")
    if secret is not None:
        name = as_str(as_dict(secret).get("name"))
        if not name:
            causes.append(required(f"{path}.nodePublishSecretRef.name"))
        else:
            causes += subdomain_causes(name, f"{path}.name")
    return causes


def volume_causes(
    volumes: Any, path: str, pod_name: str = ""
) -> tuple[dict[str, Obj], list[Cause]]:
    """ValidateVolumes: the valid volumes by name, and the causes. ``pod_name`` (a Pod's, not a
    template's) names the PVCs ephemeral volumes create."""
    found: dict[str, Obj] = {}
    causes: list[Cause] = []
    vols = [as_dict(v) for v in as_list(volumes)]
    created = {
        f"{pod_name}-{as_str(v.get('name'))}"
        for v in vols
        if pod_name and v.get("ephemeral") is not None
    }
    for index, vol in enumerate(vols):
        where = f"{path}[{index}]"
        name = as_str(vol.get("name"))
        errs: list[Cause] = []
        count = 0
        for key, shown, validated in _VOLUME_SOURCES:
            if vol.get(key) is None:
                continue
            if count:
                errs.append(forbidden(f"{where}.{shown}", _ONE_TYPE))
            else:
                count += 1
                errs += _source_causes(key, vol[key], f"{where}.{validated}", pod=bool(pod_name))
            if key == "emptyDir":
                errs += _size_limit_causes(vol[key], f"{where}.emptyDir.sizeLimit")
            if key == "ephemeral" and count == 1 and pod_name and name:
                claim = f"{pod_name}-{name}"
                errs += [
                    invalid(f"{where}.name", name, f"PVC name {go_quote(claim)}: {m}")
                    for m in subdomain_errors(claim)
                ]
        if not count:
            errs.append(required(where, "must specify a volume type"))
        if not name:
            errs.append(required(f"{where}.name"))
        else:
            errs += label_causes(name, f"{where}.name")
        if name in found:
            errs.append(duplicate(f"{where}.name", name))
        if errs:
            causes += errs
        else:
            found[name] = vol
        claim_name = as_str(as_dict(vol.get("persistentVolumeClaim")).get("claimName"))
        if vol.get("persistentVolumeClaim") is not None and claim_name in created:
            detail = "must not reference a PVC that gets created for an ephemeral volume"
            causes.append(invalid(f"{where}.persistentVolumeClaim.claimName", claim_name, detail))
    return found, causes


def _size_limit_causes(empty_dir: Any, path: str) -> list[Cause]:
    """An emptyDir's sizeLimit may not be negative."""

    raw = as_dict(empty_dir).get("sizeLimit")
    quantity = parse_or_none(raw) if raw is not None else None
    if quantity is not None and quantity.value < 0:
        return [forbidden(path, "SizeLimit field must be a valid resource quantity")]
    return []
