"""The toy study's sandbox view: ``plugin`` (the walk in the plane, and its distance from the origin)."""
