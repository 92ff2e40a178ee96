"""kubelite's Python client (issue 5 builds it out). For now: reading a kubeconfig and the
administrator's compaction call, which ``kubelite compact`` wraps."""
