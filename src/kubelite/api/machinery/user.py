"""Who a request is, once authenticated: a user's name, groups, uid and extra attributes
(k8s.io/apiserver ``pkg/authentication/user/user.go``), and the two users every server knows.

Authentication (:mod:`kubelite.api.auth.authn`) produces these; authorization, admission, audit and
the storages read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...]
    uid: str = ""
    #: (key, values) pairs, as kube's ``user.Info.GetExtra()``
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def info(self) -> Obj:
        """The user as kube's ``UserInfo`` (SelfSubjectReview, TokenReview, audit events)."""
        out: Obj = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {key: list(values) for key, values in self.extra}
        return out


ADMIN = User("kubelite-admin", ("system:masters", "system:authenticated"))
#: A request without credentials (allowed only on the public paths).
ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))
