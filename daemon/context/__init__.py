"""``memsync context``: the memories that matter for a task or a prompt, as a block an agent's prompt
can take (``compose``), and the hook adapter that reads an agent tool's JSON and writes its answer
(``hook``). Standard library only, like the other light paths: a hook runs on every prompt."""
