"""The Django application of the benchmarking service."""

from django.apps import AppConfig


class ServiceConfig(AppConfig):
    name = "sgg_eval.service"
    label = "service"
    verbose_name = "sgg-eval benchmarking service"
    default_auto_field = "django.db.models.BigAutoField"
