"""The production configuration of gunicorn for privdash: ``gunicorn app:server -w 4`` from the repository reads it
through ``gunicorn.conf.py``; from an installed wheel, ``gunicorn -c python:dashboard.gunicorn_conf
'dashboard.wsgi:server' -w 4``.

* ``worker_class``: :class:`dashboard.server.SlowClientWorker`, gunicorn's threaded worker that gives a request a
  thread only once its head and small body have arrived (``PRIVDASH_READ_TIMEOUT``), so slow or stalled clients
  cannot hold the workers (gunicorn's default ``sync`` worker is held by six of them).
* ``threads``: requests one worker runs at once (Dash callbacks wait on disk and on background jobs).
* ``keepalive``: seconds an idle connection, or one pausing between two packets of a request, is kept.
* ``timeout``: a worker whose event loop stops answering this long is restarted (a request itself is bounded by the
  reading, parsing and job limits of the settings, not by this).
"""

from __future__ import annotations

worker_class = "dashboard.server.SlowClientWorker"
threads = 8
keepalive = 5
timeout = 30
