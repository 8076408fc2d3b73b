"""The dream cycle: folding near-duplicate memories into one canonical memory and marking facts a
newer memory replaced, never deleting one. ``signature`` (what a memory names: identifiers,
numbers, keyed values) and ``plan`` (the night's decisions from memories and their vectors) are
pure; ``steps`` is what a backbone records of each step so that ``memsync unmerge`` undoes it.
"""
