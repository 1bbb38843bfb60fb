"""A request that finds the database gone (PostgreSQL restarting, a network cut) gets one line and HTTP 503 with
``Retry-After``, not a server error page: Django opens a new connection for the next request, so the service is back
as soon as the database is, with nobody to restart it (the worker's tasks retry: ``queue.score``)."""

from __future__ import annotations

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse

UNAVAILABLE = "the service's database cannot be reached just now; try again in a minute"
RETRY_AFTER_S = 30


class DatabaseUnavailable:
    """Django middleware: a view's :class:`OperationalError` or :class:`InterfaceError` becomes a 503."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exc):
        if not isinstance(exc, (OperationalError, InterfaceError)):
            return None
        if request.path.startswith("/api/"):
            response = JsonResponse({"error": UNAVAILABLE}, status=503)
        else:
            response = HttpResponse(UNAVAILABLE + "\n", status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
