"""Server metrics: a registry (registry.py), the coordinator's named metrics (server_metrics.py),
and two ways out: a Prometheus text page with health checks (http.py) and StatsD pushes (statsd.py)."""
