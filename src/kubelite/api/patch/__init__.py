"""PATCH bodies: JSON patch (RFC 6902, with kube-apiserver's bounds), JSON merge patch (RFC 7386)
and Kubernetes' strategic merge patch. Choosing one by Content-Type and applying it to an object
is :mod:`kubelite.api.machinery.patching`.
"""
