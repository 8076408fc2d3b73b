"""The pure policies both backbones apply, each pinned by a case table in contracts/ that the
TypeScript copy is held to as well: approvals (``approvals``), leases on job slots (``leases``) and
what an approval's decision does to its tasks (``tasks``)."""
