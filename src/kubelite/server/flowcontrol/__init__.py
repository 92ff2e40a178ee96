"""API Priority and Fairness (kube-apiserver's default request admission since 1.20): requests
classified by FlowSchema into priority levels, each with its share of the server's seats, and
queued per flow so that one user cannot starve another.

- :mod:`.config`: the FlowSchemas and PriorityLevelConfigurations in force, digested; each
  level's limits and borrowing;
- :mod:`.matching`: a request against a FlowSchema's rules, and its flow distinguisher;
- :mod:`.queueset`: one level's seats, queues, shuffle sharding and fair queuing;
- :mod:`.allocation`: the concurrency the levels lend and borrow;
- :mod:`.filter`: the filter, its 429 and Retry-After, the ``X-Kubernetes-PF-*`` headers;
- :mod:`.follower`: the configuration followed from the store, and the periodic work.
"""
