"""Django's admin, with the maintainers' actions: approve onto the approved board, hide or show, re-score with the
installed sgg-eval (the older scores stay, each with its version). Deleting is the admin's own action."""

from django.contrib import admin
from django.db import transaction

from sgg_eval.service.models import ApiToken, Benchmark, Score, Submission
from sgg_eval.service.queue import enqueue


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ("name", "title", "task", "protocol", "daily_limit", "simulated", "active")
    readonly_fields = ("name", "arguments", "protocol", "task", "simulated", "active")  # the benchmarks' file's

    @admin.action(description="Re-score every scored submission with the installed sgg-eval")
    def rescore_all(self, request, queryset):
        count = _rescore(Submission.objects.filter(benchmark__in=queryset))
        self.message_user(request, f"{count} submissions queued for re-scoring")

    actions = ["rescore_all"]


class ScoreInline(admin.TabularInline):
    model = Score
    extra = 0
    readonly_fields = ("created", "sgg_eval_version", "protocol")
    exclude = ("document",)
    can_delete = False


def _setting(field: str, value: bool, name: str, description: str):
    """An admin action that sets ``field`` to ``value`` on the chosen submissions."""

    def action(modeladmin, request, queryset):
        queryset.update(**{field: value})

    action.__name__ = name
    return admin.action(description=description)(action)


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "method", "benchmark", "owner", "status", "public", "approved", "hidden", "created")
    list_filter = ("benchmark", "status", "public", "approved", "hidden")
    search_fields = ("method", "owner__username", "sha256")
    readonly_fields = ("file", "filename", "sha256", "created", "status", "message")
    inlines = [ScoreInline]

    @admin.action(description="Re-score with the installed sgg-eval")
    def rescore(self, request, queryset):
        self.message_user(request, f"{_rescore(queryset)} submissions queued for re-scoring")

    actions = [
        _setting("approved", True, "approve", "Approve: put on the approved board"),
        _setting("approved", False, "unapprove", "Take off the approved board"),
        _setting("hidden", True, "hide", "Hide from every board"),
        _setting("hidden", False, "unhide", "Show again"),
        "rescore",
    ]


def _rescore(queryset) -> int:
    chosen = list(queryset.filter(status__in=[Submission.DONE, Submission.FAILED]))
    with transaction.atomic():
        for s in chosen:
            Submission.objects.filter(pk=s.pk).update(status=Submission.QUEUED)
            enqueue(s)
    return len(chosen)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("owner", "name", "prefix", "created", "revoked")
    readonly_fields = ("owner", "prefix", "digest", "created")
