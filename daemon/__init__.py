"""memsync's per-site process: CLI, configuration, run loop, change detection, status, demo."""


def version() -> str:
    """The installed memsync's version (``--version``, the registry's heartbeat)."""
    from importlib import metadata  # here, not at import: the CLI's light paths import this package

    try:
        return metadata.version("memsync")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"
