"""Who a request is and what it may do: authentication by token or client certificate
(:mod:`.authn`), RBAC's evaluation and its index of roles and bindings (:mod:`.rbac`,
:mod:`.rbacindex`, :mod:`.rbaccover` for escalation checks), and the authorizer that answers
for requests and access reviews (:mod:`.authorizer`).
"""
