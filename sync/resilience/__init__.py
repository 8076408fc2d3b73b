"""How every loop copes with failure, whatever it talks to: the one retry policy (``retry``), the
one periodic loop with backoff (``pacing``) and the one rule for logging a recurring problem
(``problems``)."""
