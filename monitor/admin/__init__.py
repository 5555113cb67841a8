"""The admin server: health, metrics, the JSON API and the status page (``server.AdminServer``)."""

from monitor.admin.server import AdminServer

__all__ = ["AdminServer"]
