"""The core group's validation (kube's ``pkg/apis/core/validation``): pods and pod templates by
part of the pod spec (containers, volumes, mounts, environment, scheduling, security, DNS,
ephemeral containers, what an update may change), Services, and ConfigMap and Secret data.
Each ``validate_*`` returns the causes of a 422, kube's field paths and texts."""
