"""Where a site's episodes come from. Each kind of source is a room of its own (``agentdb``: an
AgentDB file, read safely whoever writes it); what every kind shares sits beside them: the secrets
no episode may carry off the site (``redaction``)."""
