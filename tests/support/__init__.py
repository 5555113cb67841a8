"""Reusable test doubles shared across the test tree."""
