"""The HTTP API for scripts (``sgg-eval submit``), authenticated by an ``Authorization: Token ...`` header (no
cookie, so no CSRF), and the boards' CSV and JSON exports. Errors are JSON ``{"error": one line}``."""

from __future__ import annotations

import csv
import functools
import io

from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from sgg_eval.service import tokens
from sgg_eval.service.boards import BOARDS, as_records, rows
from sgg_eval.service.forms import SubmissionForm, submission_fields
from sgg_eval.service.intake import Refused, submit, visible
from sgg_eval.service.models import Benchmark, Submission
from sgg_eval.service.storage import STORAGE_FULL, refused_as_full


def _user(request):
    return tokens.user_of(request.headers.get("Authorization", ""))


def _error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _token_required(view):
    """``view`` for a request with a valid token, its user as ``request.api_user``; a 401 for any other."""

    @functools.wraps(view)
    def checked(request, *args, **kwargs):
        request.api_user = _user(request)
        if request.api_user is None:
            return _error("a valid API token is required (Authorization: Token ...)", 401)
        return view(request, *args, **kwargs)

    return checked


def _status(request, s: Submission) -> dict:
    score = s.score
    return {
        "id": s.pk,
        "benchmark": s.benchmark.name,
        "method": s.method,
        "status": s.status,
        "message": s.message,
        "public": s.public,
        "approved": s.approved,
        "sha256": s.sha256,
        "protocol": s.benchmark.protocol,
        "sgg_eval_version": score.sgg_eval_version if score else None,
        "metrics": score.document.get("metrics") if score else None,
        "url": request.build_absolute_uri(f"/s/{s.pk}/"),
        # for an operator tracing a scoring: the worker (host:pid) that claimed it
        **({"worker": s.claimed_by} if getattr(request, "api_user", None) and request.api_user.is_staff else {}),
    }


@csrf_exempt
@require_POST
@_token_required
def create(request):
    if refused_as_full(request):
        return _error(STORAGE_FULL, 507)
    benchmark = Benchmark.objects.filter(name=request.POST.get("benchmark", ""), active=True).first()
    if benchmark is None:
        return _error(f"no benchmark named {request.POST.get('benchmark', '')!r}", 404)
    form = SubmissionForm(request.POST, request.FILES)
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        return _error(f"{field}: {errors[0]}", 400)
    data = form.cleaned_data
    try:
        s = submit(request.api_user, benchmark, data["file"], **submission_fields(data))
    except Refused as exc:
        return _error(str(exc), exc.status)
    return JsonResponse(_status(request, s), status=201)


@require_GET
def detail(request, pk: int):
    user = request.api_user = _user(request)
    s = Submission.objects.select_related("benchmark").filter(pk=pk).first()
    if s is None or not visible(s, user or request.user):
        return _error("no such submission", 404)
    return JsonResponse(_status(request, s))


@csrf_exempt
@require_POST
@_token_required
def approve(request, pk: int):
    """Put a submission on the approved board (or take it off: ``approved=0``); admins only."""
    if not request.api_user.is_staff:
        return _error("only an admin approves a submission", 403)
    s = get_object_or_404(Submission, pk=pk)
    s.approved = request.POST.get("approved", "1") != "0"
    s.save(update_fields=["approved"])
    return JsonResponse(_status(request, s))


def export(request, name: str, which: str, fmt: str):
    benchmark = get_object_or_404(Benchmark, name=name)
    if which not in BOARDS or fmt not in ("json", "csv"):
        raise Http404
    records = as_records(benchmark, which, rows(benchmark, which, request.GET.get("sort")), _base(request))
    if fmt == "json":
        return JsonResponse({"benchmark": benchmark.name, "board": which, "rows": records})
    out = io.StringIO()
    fields = ["rank", "id", "method", "paper", "code", "date", "protocol", "sgg_eval_version", "sha256", "url"]
    writer = csv.DictWriter(out, fieldnames=fields + list(benchmark.headline), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{benchmark.name}-{which}.csv"'
    return response


def _base(request) -> str:
    return request.build_absolute_uri("/").rstrip("/")
