"""Fleet mode: what the replicas of one monitor share through Redis (``fleet.redis_url``)."""
