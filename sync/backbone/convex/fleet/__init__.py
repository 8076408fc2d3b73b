"""Convex's fleet roles: coordination over the registry, job leases and runs, health, the digest and tasks."""
