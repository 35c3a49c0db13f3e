"""Core tests: the classic coordinator driven through CoordinatorContext (fake clock and timers)."""
