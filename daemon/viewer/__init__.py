"""``memsync ui``: the web viewer for a site's memory, its fleet, approvals and digest, on 127.0.0.1.

``auth`` (the one-time login, sessions, CSRF, the headers; pure), ``html`` (escaped-by-default HTML
from strings; pure), ``pages/`` (each page rendered from use cases' results; pure), ``views`` (what
each page asks the use cases for: the viewer's only way to the work), ``app`` (the routes and the
guard in front of them), ``serve`` (binding, the printed login link, uvicorn). ``static/``: the
stylesheet and the one script (the fleet's live updates), served by the viewer itself.
"""
