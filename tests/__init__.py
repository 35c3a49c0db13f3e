"""Tests of groupcoord."""
