"""Classic-protocol members inside consumer groups (docs/spec/consumer-protocol.md#classic-members), the online upgrade
of a classic group to a consumer group (10.1) and the downgrade back (10.3): code between core/classic and
core/consumer."""
