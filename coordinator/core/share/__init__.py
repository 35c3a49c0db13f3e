"""Share groups (KIP-932): membership and assignment (coordinator.py), and the pure state machine
of one share-partition (partition.py) that the shell's share-partition manager drives."""
