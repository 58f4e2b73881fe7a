"""The one root exception of statestream and its few subclasses.

Every error a user can act on is a `StatestreamError` whose message says what is wrong and what to
do; the CLI prints it as one line and exits non-zero, never with a stack trace.
"""


class StatestreamError(Exception):
    """Root of every error statestream raises on purpose."""


class ConfigError(StatestreamError):
    """A setting is invalid or missing."""


class EnvironmentProblem(StatestreamError):
    """The machine lacks something statestream needs (Java, a jar, a package, a free port)."""


class ServiceError(StatestreamError):
    """A local service could not be started, stopped or reached."""


class InputError(StatestreamError):
    """An input could not be read at all (a missing file, an unreadable stream)."""


class SchemaError(StatestreamError):
    """A DataFrame lacks a column a call needs, or has it with a type the call cannot take."""
