"""memsync's sync engine: AgentDB reader, sidecar state, backbones, and the pass that joins them.

Data flows one way: AgentDB file -> reader -> engine -> backbone. Nothing in this package imports
from ``daemon``; the daemon drives the engine.
"""
