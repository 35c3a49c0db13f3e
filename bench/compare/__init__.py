"""`make bench-compare`: the same workloads against this server and a peer broker, side by side."""
