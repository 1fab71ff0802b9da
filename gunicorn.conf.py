"""gunicorn's configuration when it runs from the repository (``gunicorn app:server -w 4``): the shipped one."""

from dashboard.gunicorn_conf import keepalive, threads, timeout, worker_class

__all__ = ["keepalive", "threads", "timeout", "worker_class"]
