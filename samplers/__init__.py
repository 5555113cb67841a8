"""Sampling policies: which conversations the evaluators see, with Horvitz–Thompson weights."""
