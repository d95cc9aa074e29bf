"""The error every layer raises for bad input: :class:`ConfigError` (re-exported by :mod:`attnlab.core.config`,
where it is usually imported from). Its own module so that :mod:`attnlab.core.device`, which parses the ``device``
field for the config, and the config import it without importing each other in a loop."""

from __future__ import annotations


class ConfigError(ValueError):
    """A config could not be built; the message is one line meant for the user."""
