"""Use cases about the memories: remember, related, export, forget, uses and pins, the dream, context."""
