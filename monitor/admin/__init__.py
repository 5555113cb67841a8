"""The admin server: health, metrics, the JSON API and the status page (``server.AdminServer``)."""
