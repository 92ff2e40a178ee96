"""What every group's validation shares (kube's ``apimachinery/pkg/api/validation`` and
``pkg/apis/core/validation``'s field helpers): field paths and causes (:mod:`.fields`), and
Go's rendering of values in messages (:mod:`.godiff`)."""
