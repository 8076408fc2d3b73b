"""Use cases about the fleet and its people: jobs, approvals, tasks, status, adopting the seed design."""
