"""The pages: benchmarks, boards, a submission, the upload form, one's own submissions and tokens, sign-up.
Log-in, log-out and the admin are Django's own."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from sgg_eval.core.protocols import BY_NAME
from sgg_eval.report.site import PAGE_STYLE
from sgg_eval.service import result_page, tokens
from sgg_eval.service.boards import APPROVED, BOARDS, PUBLIC, rows
from sgg_eval.service.forms import SubmissionForm, TokenForm, submission_fields
from sgg_eval.service.intake import Refused, submit, visible
from sgg_eval.service.models import ApiToken, Benchmark, Submission
from sgg_eval.service.storage import STORAGE_FULL, refused_as_full


def home(request):
    return render(request, "service/home.html", {"benchmarks": Benchmark.objects.filter(active=True)})


def caption(benchmark: Benchmark) -> str:
    """What the numbers are, as the results site says it: the protocol, its tool and what it does."""
    p = BY_NAME[benchmark.protocol]
    sim = "SIMULATED data: these numbers say nothing about a real model. " if benchmark.simulated else ""
    return f"{sim}Protocol {p.name}: {p.summary} ({p.source.tool}, {p.source.where}). Recalls in %."


def board(request, name: str, which: str = PUBLIC):
    benchmark = get_object_or_404(Benchmark, name=name)
    if which not in BOARDS:
        raise Http404
    sort = request.GET.get("sort")
    table = rows(benchmark, which, sort)
    context = {
        "benchmark": benchmark,
        "which": which,
        "other": APPROVED if which == PUBLIC else PUBLIC,
        "rows": table,
        "sort": sort if sort in benchmark.headline else benchmark.headline[0],
        "caption": caption(benchmark),
    }
    return render(request, "service/board.html", context)


def _visible_submission(request, pk: int) -> Submission:
    s = get_object_or_404(Submission.objects.select_related("benchmark", "owner"), pk=pk)
    if not visible(s, request.user):
        raise Http404  # as for an address that does not exist: guessing one tells nothing
    return s


def submission(request, pk: int):
    """A result's page: its status and file, and once scored the results site's model page
    (:mod:`sgg_eval.service.result_page`)."""
    s = _visible_submission(request, pk)
    score = s.score
    context = {"s": s, "score": score, "caption": caption(s.benchmark), "mine": s.owner == request.user}
    if score is not None:
        page = result_page.board(s.benchmark, result_page.comparable(s, request.user))
        which = APPROVED if s.approved else PUBLIC
        context |= {
            "entry": result_page.entry_key(s),
            "model_page": result_page.page_body(page, reverse("board_of", args=[s.benchmark.name, which])),
            "style": PAGE_STYLE,
        }
    return render(request, "service/submission.html", context)


def submission_data(request, pk: int):
    """The data a result's page draws (``window.SGG_BOARD``): its numbers and those of the results it can be
    compared with, as the viewer may see them."""
    s = _visible_submission(request, pk)
    if s.score is None:
        raise Http404
    page = result_page.board(s.benchmark, result_page.comparable(s, request.user))
    response = HttpResponse(result_page.page_data(page), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "private, no-store"  # it changes as results are published, approved, hidden
    return response


@login_required
def upload(request, name: str):
    benchmark = get_object_or_404(Benchmark, name=name, active=True)
    form, status = SubmissionForm(request.POST or None, request.FILES or None), 200
    if request.method == "POST" and refused_as_full(request):
        form, status = SubmissionForm(request.POST), 507  # the other fields kept, for the next try
        form.is_valid()
        form.errors.pop("file", None)  # dropped unread, as the line says
        form.add_error(None, STORAGE_FULL)
    elif request.method == "POST" and form.is_valid():
        try:
            s = submit(request.user, benchmark, form.cleaned_data["file"], **submission_fields(form.cleaned_data))
        except Refused as exc:
            form.add_error(None, str(exc))
            status = exc.status
        else:
            return redirect("submission", pk=s.pk)
    return render(request, "service/upload.html", {"benchmark": benchmark, "form": form}, status=status)


@login_required
def mine(request):
    return render(request, "service/mine.html", {"submissions": request.user.submissions.select_related("benchmark")})


@login_required
@require_POST
def publish(request, pk: int):
    s = get_object_or_404(Submission, pk=pk, owner=request.user)
    s.public = request.POST.get("public") == "1"
    s.save(update_fields=["public"])
    return redirect("submission", pk=pk)


@login_required
@require_POST
def withdraw(request, pk: int):
    s = get_object_or_404(Submission, pk=pk, owner=request.user)
    s.file.delete(save=False)
    s.delete()
    messages.info(request, f"submission #{pk} withdrawn and its file deleted")
    return redirect("mine")


@login_required
def token_list(request):
    form, shown = TokenForm(request.POST or None), None
    if request.method == "POST" and form.is_valid():
        _, shown = tokens.create_token(request.user, form.cleaned_data["name"])
    context = {"tokens": ApiToken.objects.filter(owner=request.user).order_by("-created"), "form": form, "shown": shown}
    return render(request, "service/tokens.html", context)


@login_required
@require_POST
def token_revoke(request, pk: int):
    if not tokens.revoke(request.user, pk):
        raise Http404  # not one of this user's live tokens: as for any address that is not theirs
    return redirect("tokens")


def signup(request):
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")  # axes only counts log-ins
        return redirect("home")
    return render(request, "service/signup.html", {"form": form})
