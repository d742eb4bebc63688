"""``cadillac serve``: a local web dashboard over a home, which it reads and never writes.

* :mod:`.app` makes the Starlette application: the pages' routes, the access token every
  request needs (:class:`.app.Guard`) and the headers every response carries (a
  Content-Security-Policy that allows no inline script and nothing from another origin).
* :mod:`.pages` holds one module per page (runs, a build, a matrix run, an improve cycle,
  the nights, the memory), each a list of routes and a template of the same name under
  ``templates/``; :mod:`.render` is their one Jinja environment (autoescape on: every
  string a model wrote is escaped) and the filters they share.
* :mod:`.live` follows a running build for the build page's server-sent events.
* :mod:`.config` is the server's configuration; :mod:`.server` binds the socket, prints
  the URL with the token and runs uvicorn.

The assets (``static/``) ship in the package: no CDN, no build step.
"""
