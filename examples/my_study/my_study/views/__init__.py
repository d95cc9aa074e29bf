"""The toy study's sandbox view: ``plugin`` (the walk, and a gallery of what a panel can draw)."""
