"""Tests mirroring the package of the same path."""
