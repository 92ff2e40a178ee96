"""Admission plugins behind the seam of :mod:`kubelite.api.machinery.admission`: admission webhooks
(:mod:`.webhooks`), validating and mutating admission policies (:mod:`.policy`), and the rules
both share to decide which writes they concern (:mod:`.rules`).
"""
