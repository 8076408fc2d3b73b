"""memsync's per-site process: CLI, configuration, run loop, change detection, status, demo."""
