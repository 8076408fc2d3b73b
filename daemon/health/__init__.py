"""Health, judged pure from facts: one site's (``site``: what ``status`` exits with) and the
fleet's, every site and agent the backbone knows (``fleet``)."""
