"""The WSGI application (waitress serves it in ``sgg-eval serve``; any WSGI server can at scale)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sgg_eval.service.settings")
application = get_wsgi_application()
